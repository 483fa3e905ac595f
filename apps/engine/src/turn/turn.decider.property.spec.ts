import fc from 'fast-check';
import { DEFAULT_LIMITS, SteerlineError, checkInvariants, isTerminalTurnEvent, type ApprovalPolicy, type SteerlineEvent, type TurnEvent } from '@steerline/contracts';
import type { ConversationCommand } from '../conversation/conversation.commands';
import { decide as decideConversation, execute as executeConversation } from '../conversation/conversation.decider';
import { evolve as evolveConversation } from '../conversation/conversation.evolve';
import { initialConversation, type ConversationState } from '../conversation/conversation.state';
import { execute } from './turn.decider';
import type { TurnCommand } from './turn.commands';
import { evolve } from './turn.evolve';
import { emptyRun, hasRun, initialState, pendingApprovals, stepCalls, type RunningTurn, type TurnRun, type TurnState } from './turn.state';
import { NEXT_TURN_ID, call, newTurnState, startCommand, steerId } from './turn.fixtures';

/** One random step of the outside world; interpreted against the current state. */
const Action = fc.record({
  kind: fc.constantFrom('submit', 'submit', 'submit', 'interrupt', 'interrupt', 'interruptWaiting', 'interruptByRunner', 'stopped', 'submitDrop', 'submitNext', 'edit', 'expire', 'resubmit', 'blank', 'withdraw', 'model', 'model', 'tool', 'tool', 'tool', 'approve', 'approve', 'deny', 'timeout', 'cancel', 'fail', 'abandon', 'resume'),
  pick: fc.nat(),
  tools: fc.nat({ max: 3 }),
  ok: fc.integer({ min: 0, max: 9 }).map((n) => n > 0),
  fatal: fc.boolean(),
});
type Action = typeof Action extends fc.Arbitrary<infer T> ? T : never;

/** A turn started at once, or queued first and then started or cancelled (docs/design.md §8). */
const Opening = fc.constantFrom('start', 'start', 'queueThenStart', 'queueThenCancel');

/** No policy, one tool's calls, or every call waits for a decision. */
const Approvals = fc.constantFrom<ApprovalPolicy | undefined>(undefined, { tools: ['sleep'] }, { tools: ['*'] });
const TOOL_NAMES = ['sleep', 'echo'];

const Limits = fc.record({
  maxQueued: fc.integer({ min: 1, max: 6 }),
  maxContinuations: fc.integer({ min: 0, max: 3 }),
  maxSteps: fc.integer({ min: 1, max: 8 }),
});

/** The run of the turn, empty while it has not started. */
const runOf = (state: TurnState): TurnRun => (hasRun(state) ? state : emptyRun());

let nextSteer = 1;
let ids = 0;
const ctx = () => ({ id: `0190c000-0000-7000-8000-${String(++ids).padStart(12, '0')}`, at: '2026-01-01T00:00:00.000Z' });

function commandFor(action: Action, state: TurnState, submitted: string[]): TurnCommand {
  const known = submitted.length ? submitted[action.pick % submitted.length] : steerId(999_999);
  switch (action.kind) {
    case 'submit':
      return { type: 'SubmitSteer', steerId: steerId(nextSteer++), text: `steer ${nextSteer}` };
    case 'submitDrop':
    case 'submitNext':
      return { type: 'SubmitSteer', steerId: steerId(nextSteer++), text: `steer ${nextSteer}`, onTurnEnd: action.kind === 'submitDrop' ? 'drop' : 'next_turn', expiresAt: '2030-01-01T00:00:00.000Z' };
    case 'interrupt':
    case 'interruptWaiting':
      // `interruptWaiting`: sleep declares itself non-interruptible, so its running calls are waited for.
      return {
        type: 'Interrupt',
        steerId: steerId(nextSteer++),
        text: `urgent ${nextSteer}`,
        ...(action.fatal && { onTurnEnd: 'drop' as const }),
        ...(action.pick % 2 === 0 && { partialText: `partial ${action.pick}` }),
        uninterruptible: action.kind === 'interruptWaiting' ? ['sleep'] : [],
        elapsedMs: { [`call_${runOf(state).step}_0`]: action.pick % 1000 },
      };
    case 'interruptByRunner':
      // An external turn's: the runner cuts the step, so every running call is waited for and an answer waits for the runner's report.
      return { type: 'Interrupt', steerId: steerId(nextSteer++), text: `urgent ${nextSteer}`, cutBy: 'runner', uninterruptible: [...new Set(stepCalls(runOf(state)).map((c) => c.name))] };
    case 'stopped':
      // The runner's report of the step it stopped (sometimes a step the turn has left, or one no urgent steer waits on).
      return { type: 'RecordInterruption', step: Math.max(1, runOf(state).step - (action.pick % 3 === 0 ? 1 : 0)), ...(action.ok && { partialText: `cut ${action.pick}` }) };
    case 'edit':
      return { type: 'EditSteer', steerId: known, text: `edited ${action.pick}` };
    case 'expire':
      return { type: 'ExpireSteer', steerId: known };
    case 'resubmit':
      return { type: 'SubmitSteer', steerId: known, text: 'again' };
    case 'blank':
      return { type: 'SubmitSteer', steerId: steerId(nextSteer++), text: '   ' };
    case 'withdraw':
      return { type: 'WithdrawSteer', steerId: known };
    case 'model':
      return {
        type: 'RecordModelAnswer',
        step: runOf(state).step,
        text: 'answer',
        nextTurnId: NEXT_TURN_ID,
        toolCalls: Array.from({ length: action.tools }, (_, i) => call(runOf(state).step, i, TOOL_NAMES[(action.pick + i) % 2])),
      };
    case 'approve':
    case 'deny':
    case 'timeout': {
      // Any call of the step, decided or not: repeats and contradictions must be answered safely.
      const ids = stepCalls(runOf(state)).map((c) => c.toolCallId);
      const id = ids.length ? ids[action.pick % ids.length] : 'call_none';
      return { type: 'DecideApproval', toolCallId: id, decision: action.kind === 'approve' ? 'approved' : 'denied', by: action.kind === 'timeout' ? 'timeout' : 'user' };
    }
    case 'tool': {
      // Only calls that run: a call waiting for approval has no result to report.
      const pending = stepCalls(runOf(state)).filter((c) => c.progress !== 'finished' && (!c.approval || c.approval.status === 'approved'));
      const id = pending.length ? pending[action.pick % pending.length].toolCallId : 'call_none';
      return { type: 'RecordToolResult', step: runOf(state).step, toolCallId: id, name: 'sleep', ok: action.ok, durationMs: 1, ...(action.ok ? { output: 'ok' } : { error: { code: 'x', message: 'x' }, fatal: action.fatal }) };
    }
    case 'cancel':
      return { type: 'CancelTurn', reason: 'user' };
    case 'fail':
      return { type: 'FailTurn', code: 'model_failed', message: 'boom' };
    case 'abandon':
      return { type: 'AbandonTurn', reason: 'engine_lost' };
    case 'resume':
      return { type: 'ResumeTurn', engineId: `engine-${action.pick % 3}`, limit: 3, rerunnable: action.ok ? TOOL_NAMES : [], nextTurnId: NEXT_TURN_ID };
  }
}

describe('turn decider under random interleavings', () => {
  it('every history satisfies I1–I7 and settles each accepted steer exactly once, with its last text, and no refused one', () => {
    fc.assert(
      fc.property(Limits, Approvals, Opening, fc.array(Action, { maxLength: 80 }), fc.boolean(), (limits, approvals, opening, actions, finishByCancel) => {
        let state = newTurnState();
        const events: TurnEvent[] = [];
        const submitted: string[] = [];
        const refused = new Set<string>();
        let lastBatch = 0;
        const apply = (command: TurnCommand) => {
          try {
            const result = execute(state, command, ctx);
            state = result.state;
            events.push(...result.events);
            lastBatch = result.events.length;
            if (command.type === 'SubmitSteer' || command.type === 'Interrupt') submitted.push(command.steerId);
          } catch (err) {
            if (!(err instanceof SteerlineError)) throw err;
            // A refused command appends nothing; remember refused steers that were never accepted.
            if ((command.type === 'SubmitSteer' || command.type === 'Interrupt') && !runOf(state).steers.has(command.steerId)) refused.add(command.steerId);
          }
        };
        if (opening !== 'start') {
          // A queued turn: nothing but its start or its cancel is accepted before it runs.
          apply({ type: 'QueueTurn', prompt: 'queued', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: { ...DEFAULT_LIMITS, ...limits }, position: 1 });
          for (const action of actions.slice(0, 3)) if (action.kind !== 'model' && action.kind !== 'tool' && action.kind !== 'cancel') apply(commandFor(action, state, submitted));
          expect(events.map((e) => e.type)).toEqual(['TurnQueued']);
          if (opening === 'queueThenCancel') apply({ type: 'CancelTurn', reason: 'never mind' });
        }
        apply(startCommand(limits, approvals));
        for (const action of actions) {
          // Answer the model only when asked, as the runner does; tools only while they run.
          if (action.kind === 'model' && runOf(state).awaiting !== 'model') continue;
          if (action.kind === 'tool' && runOf(state).awaiting !== 'tools') continue;
          if (action.kind === 'resume') {
            // The engine died while appending its last decision: the log kept only a prefix of it.
            const kept = events.slice(0, events.length - (action.pick % (lastBatch + 1)));
            const rebuilt = kept.reduce(evolve, newTurnState());
            lastBatch = 0;
            if (rebuilt.status !== 'running') continue;
            events.splice(kept.length);
            state = rebuilt;
          }
          apply(commandFor(action, state, submitted));
        }
        // Drive the turn to its end so every steer must be settled.
        let guard = 0;
        while (state.status === 'running' && guard++ < 1000) {
          if (finishByCancel) apply({ type: 'CancelTurn', reason: 'end of test' });
          else if (state.awaiting === 'model') apply({ type: 'RecordModelAnswer', step: state.step, text: 'fin', toolCalls: [], nextTurnId: NEXT_TURN_ID });
          else if (pendingApprovals(state).length) apply({ type: 'DecideApproval', toolCallId: pendingApprovals(state)[0].toolCallId, decision: 'approved', by: 'user' });
          else if (state.awaiting === 'tools') {
            const id = stepCalls(state).find((c) => c.progress !== 'finished')!.toolCallId;
            apply({ type: 'RecordToolResult', step: state.step, toolCallId: id, name: 'sleep', ok: true, output: 'ok', durationMs: 1 });
          }
        }
        expect(state.status).not.toBe('running');

        expect(checkInvariants(events.map((event) => ({ event })), { requireSettled: true })).toEqual([]);
        const settlements = new Map<string, number>();
        for (const e of events) {
          if (e.type === 'SteeringDelivered' || e.type === 'SteerDropped') settlements.set(e.data.steerId, (settlements.get(e.data.steerId) ?? 0) + 1);
        }
        const accepted = events.filter((e) => e.type === 'SteerQueued').map((e) => (e.data as { steerId: string }).steerId);
        for (const id of accepted) expect(settlements.get(id)).toBe(1);
        // A refused id may be sent again and accepted later (a queued turn refuses steers until it starts).
        for (const id of refused) if (!accepted.includes(id)) expect(settlements.has(id)).toBe(false);
        expect(new Set(accepted).size).toBe(accepted.length);
        // Across resumes no call starts or finishes twice, and a completed turn lost no tool result.
        const callsOf = (type: string) => events.filter((e) => e.type === type).map((e) => `${(e.data as { step: number }).step}/${(e.data as { toolCallId: string }).toolCallId}`);
        const startedCalls = callsOf('ToolCallStarted');
        const finishedCalls = callsOf('ToolCallFinished');
        expect(new Set(startedCalls).size).toBe(startedCalls.length);
        expect(new Set(finishedCalls).size).toBe(finishedCalls.length);
        if (state.status === 'completed') expect(startedCalls.filter((c) => !finishedCalls.includes(c))).toEqual([]);
        // A steer never approves (I7): every decision comes from a decision command or the turn's end
        // (or an end a crash cut short: the resumed turn goes on, as after a cut-short cancel's drops),
        // or is a denial `interrupted` after an urgent steer was accepted.
        const engineDecided = events.filter((e) => e.type === 'ToolApprovalDecided' && e.data.by === 'cancel');
        const urgentSeqs = events.filter((e) => e.type === 'SteerQueued' && e.data.urgency === 'interrupt').map((e) => e.seq);
        for (const e of engineDecided) {
          const data = e.data as { decision: string; reason?: string };
          expect(data.decision).toBe('denied');
          if (data.reason === 'interrupted') expect(urgentSeqs.some((q) => q < e.seq)).toBe(true);
          else expect(events.some((t) => t.seq > e.seq && (t.type === 'TurnCancelled' || t.type === 'TurnFailed' || t.type === 'TurnResumed'))).toBe(true);
        }
        // An interrupted answer is never recorded as an answer: no step has both outcomes.
        const answeredSteps = events.filter((e) => e.type === 'ModelResponded').map((e) => (e.data as { step: number }).step);
        for (const e of events) if (e.type === 'ModelInterrupted') expect(answeredSteps).not.toContain(e.data.step);
        // Every call of a step cut by an interrupt has exactly one result before the interrupt's delivery.
        for (const d of events) {
          if (d.type !== 'SteeringDelivered' || d.data.boundary !== 'interrupt') continue;
          const answer = events.find((e) => e.type === 'ModelResponded' && e.data.step === d.data.step && e.seq < d.seq);
          const ids = answer?.type === 'ModelResponded' ? answer.data.toolCalls.map((c) => c.id) : [];
          for (const id of ids) expect(events.filter((e) => e.type === 'ToolCallFinished' && e.seq < d.seq && e.data.step === d.data.step && e.data.toolCallId === id)).toHaveLength(1);
          if (!answer) expect(events.some((e) => e.type === 'ModelInterrupted' && e.data.step === d.data.step && e.seq < d.seq)).toBe(true);
        }
        if (!approvals) expect(events.some((e) => e.type === 'ToolApprovalRequested')).toBe(false);
        // docs/design.md §2, "At a turn's end": a drop/next_turn steer never reaches the model at a text-only end; a moved one names the one follow-up turn.
        for (const e of events) {
          if (e.type !== 'SteeringDelivered' || e.data.boundary !== 'turn_end') continue;
          const q = events.find((x) => x.type === 'SteerQueued' && x.data.steerId === e.data.steerId)!;
          expect((q.data as { onTurnEnd?: string }).onTurnEnd).toBeUndefined();
        }
        for (const e of events) if (e.type === 'SteerDropped' && e.data.reason === 'moved_to_next_turn') expect(e.data.nextTurnId).toBe(NEXT_TURN_ID);
      }),
      { numRuns: 3000 },
    );
  });
});

/*
 * One level up: the conversation's decider, with its turns, queue, follow-ups and
 * adoption interleaved at random — and engines killed mid-batch, the log keeping
 * only a prefix of what they decided, before another engine adopts the conversation.
 */
const ConversationAction = fc.record({
  kind: fc.constantFrom(
    'start', 'queue', 'queue', 'queue', 'cancelQueued', 'advance', 'advance',
    'steer', 'steerNext', 'steerNext', 'model', 'model', 'model', 'tool', 'tool', 'approve', 'cancel', 'fail',
    'crash', 'crash', 'adoptTwice',
  ),
  pick: fc.nat(),
  tools: fc.nat({ max: 2 }),
});
type ConversationAction = typeof ConversationAction extends fc.Arbitrary<infer T> ? T : never;

const CONVERSATION = '0190e000-0000-7000-8000-000000000001';
const conversationCreated: SteerlineEvent = { id: '0190e000-0000-7000-8000-000000000002', type: 'ConversationCreated', version: 1, tenantId: 'default', conversationId: CONVERSATION, turnId: null, seq: 0, at: '2026-01-01T00:00:00.000Z', data: {} };

describe('conversation decider under random interleavings', () => {
  it('every history satisfies I1–I7; at most one turn runs; queued turns start in their order; no queued turn or follow-up is lost or started twice', () => {
    let n = 0;
    const fresh = (prefix: string) => `0190e000-0000-7000-8000-${prefix}${String(++n).padStart(12 - prefix.length, '0')}`;
    fc.assert(
      fc.property(fc.array(ConversationAction, { maxLength: 60 }), Approvals, (actions, approvals) => {
        const log: TurnEvent[] = [];
        let state: ConversationState = evolveConversation(initialConversation(), conversationCreated);
        let engine = 'engine-0';
        let engines = 0;
        let lastBatch: TurnEvent[] = [];
        const model = { provider: 'scripted' as const, name: 'scripted', script: [] };
        const apply = (command: ConversationCommand): boolean => {
          const result = executeConversation(state, command, ctx);
          if (!result.ok) return false;
          state = result.state;
          log.push(...result.events);
          lastBatch = result.events;
          return true;
        };
        const running = (): RunningTurn | undefined => {
          const turn = state.phase === 'running' ? state.turns.get(state.running) : undefined;
          return turn?.status === 'running' ? turn : undefined;
        };
        const forRunning = (command: Extract<ConversationCommand, { type: 'ForTurn' }>['command']) => {
          const turn = running();
          if (turn) apply({ type: 'ForTurn', turnId: turn.turnId, command });
        };
        /** The claim a dead engine left: on the turn it ran, or on the turn that ended last (kept until the next one started). */
        const orphanClaim = () => {
          const turn = running();
          if (turn) return { turnId: turn.turnId, engineId: turn.engineId };
          const ended = state.phase === 'none' ? undefined : state.lastEnded ?? state.queue[0];
          return ended ? { turnId: ended, engineId: engine } : undefined;
        };
        const adopt = (orphan: { turnId: string; engineId: string }, engineId: string): ConversationCommand => ({
          type: 'AdoptConversation', orphan, engineId, limit: 3, rerunnable: ['sleep'], nextTurnId: fresh('f'),
        });

        for (const action of actions) {
          const turn = running();
          switch (action.kind) {
            case 'start':
            case 'queue':
              apply({ type: 'StartTurn', turnId: fresh('a'), tenantId: 'default', engineId: engine, whenBusy: action.kind === 'queue' ? 'queue' : 'reject', prompt: 'p', model, limits: DEFAULT_LIMITS, ...(approvals && { approvals }) });
              break;
            case 'cancelQueued': {
              const queue = state.phase === 'none' ? [] : state.queue;
              apply({ type: 'CancelQueuedTurn', turnId: queue.length ? queue[action.pick % queue.length] : fresh('x'), tenantId: 'default', reason: 'never mind' });
              break;
            }
            case 'advance':
              apply({ type: 'AdvanceConversation', engineId: engine });
              break;
            case 'steer':
            case 'steerNext':
              forRunning({ type: 'SubmitSteer', steerId: fresh('s'), text: 'steer', ...(action.kind === 'steerNext' && { onTurnEnd: 'next_turn' as const }) });
              break;
            case 'model':
              if (turn?.awaiting === 'model') {
                const toolCalls = Array.from({ length: action.tools }, (_, i) => ({ id: `call_${turn.turnId.slice(-4)}_${turn.step}_${i}`, name: TOOL_NAMES[(action.pick + i) % 2], args: {} }));
                forRunning({ type: 'RecordModelAnswer', step: turn.step, text: 'answer', toolCalls, nextTurnId: fresh('f') });
              }
              break;
            case 'tool': {
              const call = turn && stepCalls(turn).find((c) => c.progress === 'started');
              if (turn && call) forRunning({ type: 'RecordToolResult', step: turn.step, toolCallId: call.toolCallId, name: call.name, ok: true, output: 'ok', durationMs: 1 });
              break;
            }
            case 'approve': {
              const waiting = pendingApprovals(turn ?? initialState());
              if (waiting.length) forRunning({ type: 'DecideApproval', toolCallId: waiting[action.pick % waiting.length].toolCallId, decision: action.pick % 3 ? 'approved' : 'denied', by: 'user' });
              break;
            }
            case 'cancel':
              forRunning({ type: 'CancelTurn', reason: 'user' });
              break;
            case 'fail':
              forRunning({ type: 'FailTurn', code: 'model_failed', message: 'boom' });
              break;
            case 'crash':
            case 'adoptTwice': {
              // The engine died while appending its last batch: the log kept a prefix of it.
              const cut = action.kind === 'crash' ? action.pick % (lastBatch.length + 1) : 0;
              log.splice(log.length - cut);
              lastBatch = [];
              state = log.reduce(evolveConversation, evolveConversation(initialConversation(), conversationCreated));
              const orphan = orphanClaim();
              const dead = engine;
              engine = `engine-${++engines}`;
              if (!orphan) break;
              const read = state;
              expect(apply(adopt(orphan, engine))).toBe(true);
              // The adopter leaves no turn waiting: it resumed the running one, or started the next.
              expect(state.phase).not.toBe('between');
              if (action.kind === 'adoptTwice') {
                // A second engine decided on the same read; the fence refuses its append. Reading again, it decides nothing new.
                const rival = decideConversation(adopt(orphan, `engine-rival-${engines}`), read);
                expect(rival.ok).toBe(true);
                const again = decideConversation(adopt(orphan, `engine-rival-${engines}`), state);
                if (again.ok) expect(again.events.filter((e) => e.type === 'TurnResumed' || e.type === 'TurnStarted')).toEqual([]);
                else expect(again.refusal.code).toBe('claim_stale');
              }
              expect(dead).not.toBe(engine);
              break;
            }
          }
        }

        // Quiescence: every running turn answered to its end, then the conversation advanced, until nothing waits.
        for (let guard = 0; state.phase !== 'idle' && guard < 2000; guard++) {
          const turn = running();
          if (!turn) {
            if (!apply({ type: 'AdvanceConversation', engineId: engine })) throw new Error('advance refused');
            continue;
          }
          const waiting = pendingApprovals(turn);
          const call = stepCalls(turn).find((c) => c.progress === 'started');
          if (turn.awaiting === 'model') forRunning({ type: 'RecordModelAnswer', step: turn.step, text: 'fin', toolCalls: [], nextTurnId: fresh('f') });
          else if (waiting.length) forRunning({ type: 'DecideApproval', toolCallId: waiting[0].toolCallId, decision: 'approved', by: 'user' });
          else if (call) forRunning({ type: 'RecordToolResult', step: turn.step, toolCallId: call.toolCallId, name: call.name, ok: true, output: 'ok', durationMs: 1 });
          else forRunning({ type: 'CancelTurn', reason: 'stuck' });
        }
        expect(state.phase).toBe('idle');

        const all = [conversationCreated, ...log];
        expect(checkInvariants(all.map((event) => ({ event })), { requireSettled: true })).toEqual([]);
        const of = (type: string) => log.filter((e) => e.type === type);
        // At most one turn runs: every TurnStarted comes after the previous turn's end.
        let runningTurn: string | undefined;
        for (const e of log) {
          if (e.type === 'TurnStarted') {
            expect(runningTurn).toBeUndefined();
            runningTurn = e.turnId;
          } else if (isTerminalTurnEvent(e) && e.turnId === runningTurn) runningTurn = undefined;
        }
        // No queued turn is lost or started twice: each ends up started once or cancelled unstarted.
        const queued = of('TurnQueued').map((e) => e.turnId);
        for (const id of queued) {
          const fate = log.filter((e) => e.turnId === id && (e.type === 'TurnStarted' || (e.type === 'TurnCancelled' && e.data.steps === 0))).map((e) => e.type);
          expect(fate.length === 1 || (fate[0] === 'TurnStarted' && fate.length === 2)).toBe(true);
          expect(fate.filter((t) => t === 'TurnStarted').length).toBeLessThanOrEqual(1);
        }
        // Queued turns start in their order.
        const startedQueued = of('TurnStarted').map((e) => e.turnId).filter((id) => queued.includes(id));
        expect(startedQueued).toEqual(queued.filter((id) => startedQueued.includes(id)));
        // Every follow-up a turn moved steers to is queued exactly once, from that turn.
        const followUps = new Map<string, string>();
        for (const e of of('SteerDropped')) if (e.type === 'SteerDropped' && e.data.nextTurnId) followUps.set(e.data.nextTurnId, e.turnId);
        for (const [followUp, from] of followUps) {
          const queuedFollowUp = log.filter((e) => e.type === 'TurnQueued' && e.turnId === followUp);
          expect(queuedFollowUp.map((e) => (e.data as { fromTurnId?: string }).fromTurnId)).toEqual([from]);
        }
      }),
      { numRuns: 1500 },
    );
  });
});

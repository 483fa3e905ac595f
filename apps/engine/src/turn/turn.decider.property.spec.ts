import fc from 'fast-check';
import { DEFAULT_LIMITS, SteerlineError, checkInvariants, type ApprovalPolicy, type TurnEvent } from '@steerline/contracts';
import { execute } from './turn.decider';
import type { TurnCommand } from './turn.commands';
import { evolve } from './turn.evolve';
import { emptyRun, hasRun, pendingApprovals, stepCalls, type TurnRun, type TurnState } from './turn.state';
import { NEXT_TURN_ID, call, newTurnState, startCommand, steerId } from './turn.fixtures';

/** One random step of the outside world; interpreted against the current state. */
const Action = fc.record({
  kind: fc.constantFrom('submit', 'submit', 'submit', 'interrupt', 'interrupt', 'interruptWaiting', 'submitDrop', 'submitNext', 'edit', 'expire', 'resubmit', 'blank', 'withdraw', 'model', 'model', 'tool', 'tool', 'tool', 'approve', 'approve', 'deny', 'timeout', 'cancel', 'fail', 'abandon', 'resume'),
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

import {
  eventVersion,
  SteerlineError,
  needsApproval,
  renderSteer,
  type Boundary,
  type DropReason,
  type EventData,
  type ToolCall,
  type TurnEvent,
} from '@steerline/contracts';
import type { TurnCommand } from './turn.commands';
import { finishedCalls, interruptPending, pendingApprovals, specOf, stepCalls, stepDone, type RunningTurn, type TurnState } from './turn.state';
import { cutStep, deniedResult, stillRunning } from './turn.interrupt';
import { dropAll, editSteer, expireSteer, queuedSteers, submitSteer, turnEndDrops, withdraw } from './turn.steers';
import { evolve } from './turn.evolve';

type TurnEventType = TurnEvent['type'];
/** An event the decider wants appended, before the shell gives it id, seq and time. */
export type TurnEventDraft = { [T in TurnEventType]: { type: T; data: EventData<T> } }[TurnEventType];

/**
 * Every steering rule of docs/design.md §2 is decided here and nowhere else. Pure: no
 * clock, no ids, no I/O. Throws a `SteerlineError` when a command is refused;
 * a refused command produces no event.
 */
export function decide(command: TurnCommand, state: TurnState): TurnEventDraft[] {
  if (command.type === 'StartTurn') return startTurn(command, state);
  if (command.type === 'QueueTurn') return queueTurn(command, state);
  // A queued turn can only start or be cancelled, never both (docs/design.md §8).
  if (state.status === 'queued' && command.type === 'CancelTurn') return [{ type: 'TurnCancelled', data: { steps: 0, reason: command.reason } }];
  if (state.status !== 'running') {
    // Every steer of an ended turn is settled: these answer with its fate.
    if (command.type === 'WithdrawSteer') return withdraw(command.steerId, state);
    if (command.type === 'EditSteer') return editSteer(command, state);
    if (command.type === 'ExpireSteer') return [];
    throw new SteerlineError('turn_not_running', `turn ${state.turnId || 'unknown'} is not running`);
  }
  switch (command.type) {
    case 'SubmitSteer':
      return submitSteer(command, state);
    case 'Interrupt':
      return interrupt(command, state);
    case 'RecordInterruption':
      return recordInterruption(command, state);
    case 'WithdrawSteer':
      return withdraw(command.steerId, state);
    case 'EditSteer':
      return editSteer(command, state);
    case 'ExpireSteer':
      return expireSteer(command.steerId, state);
    case 'RecordModelAnswer':
      return recordModelAnswer(command, state);
    case 'RecordToolResult':
      return recordToolResult(command, state);
    case 'DecideApproval':
      return decideApproval(command, state);
    case 'FailTurn':
      return endTurn(state, 'turn_failed', { type: 'TurnFailed', data: { steps: state.step, error: { code: command.code, message: command.message } } });
    case 'CancelTurn':
      return endTurn(state, 'turn_cancelled', { type: 'TurnCancelled', data: { steps: state.step, reason: command.reason } });
    case 'ResumeTurn':
      return resumeTurn(command, state);
    case 'AbandonTurn':
      return endTurn(state, command.reason, { type: 'TurnFailed', data: { steps: state.step, error: { code: command.reason, message: abandonMessage[command.reason] } } });
  }
}

/**
 * Ends a running turn before its step is done: every call still waiting for a
 * decision is denied by `cancel` (I7), then the queued steers are dropped, then the end.
 */
function endTurn(state: RunningTurn, reason: DropReason, end: TurnEventDraft): TurnEventDraft[] {
  const denials = pendingApprovals(state).map(({ step, toolCallId }): TurnEventDraft => ({ type: 'ToolApprovalDecided', data: { step, toolCallId, decision: 'denied', by: 'cancel' } }));
  return [...denials, ...dropAll(state, reason), end];
}

const abandonMessage = {
  engine_lost: 'the engine that ran this turn was lost',
  engine_shutdown: 'the engine that ran this turn shut down',
} as const;

/**
 * A turn picked up from its log by another engine (docs/design.md §10). What
 * was decided before the crash but not yet appended is decided again here: the
 * first request, the calls of an answer whose starts (or approval requests) were
 * cut off, an approved call that never started, a boundary whose events were not
 * all written. A call that started and never finished runs again when its tool
 * is idempotent (the runner reruns it), otherwise it ends `interrupted`. Calls
 * waiting for approval stay waiting; a denied one whose result was lost gets it. Delivered steers are in the log, so none is
 * delivered twice.
 */
function resumeTurn(command: Extract<TurnCommand, { type: 'ResumeTurn' }>, state: RunningTurn): TurnEventDraft[] {
  if (state.resumes >= command.limit) {
    const message = `the turn's engine was lost ${state.resumes + 1} times; it is not resumed more than ${command.limit} times`;
    return endTurn(state, 'engine_lost', { type: 'TurnFailed', data: { steps: state.step, error: { code: 'engine_lost', message } } });
  }
  const resumed: TurnEventDraft = { type: 'TurnResumed', data: { engineId: command.engineId, previousEngineId: state.engineId, attempt: state.resumes + 1 } };
  const next = after(state, [resumed]);
  // The crash cut a boundary short: some of its deliveries are in the log, its request is not. The decision stands.
  if (state.delivering.length) return [resumed, ...deliver(next, state.steers.get(state.delivering[0])?.boundary ?? 'tool_results')];
  if (state.step === 0) return [resumed, { type: 'ModelRequested', data: { step: 1, steerIds: [] } }];
  if (state.awaiting === 'interrupted') return [resumed, ...boundary(next, 'interrupt')];
  // An interrupt was accepted and its cut lost: cut now. Nothing runs again (the person said stop); the lost stream's text is gone.
  // An external turn's runner still holds its step: it reports the cut to this engine as to the last.
  if (interruptPending(state) && state.spec.runner !== 'external' && (state.awaiting === 'model' || state.awaiting === 'tools')) {
    const cut = cutStep(next, { uninterruptible: [] }).drafts;
    return [resumed, ...cut, ...boundary(after(next, cut), 'interrupt')];
  }
  // A text-only answer whose end was cut off: its next_turn steers need the follow-up turn's id, as at any turn end.
  if (state.awaiting === 'nothing') return [resumed, ...boundary(next, 'turn_end', command.nextTurnId)];
  if (state.awaiting !== 'tools') return [resumed];
  const drafts: TurnEventDraft[] = [resumed];
  for (const call of stepCalls(state)) {
    const { toolCallId: id, approval } = call;
    if (call.progress === 'finished') continue;
    if (call.progress === 'answered') {
      // Never started: ask again only if the request itself was lost; an approved call starts now; a pending one keeps waiting.
      if (!approval) drafts.push(requestOrStart(state, state.step, { id, name: call.name, args: call.args }));
      else if (approval.status === 'approved') drafts.push({ type: 'ToolCallStarted', data: { step: state.step, toolCallId: id, name: call.name, args: call.args } });
      // Denied, its result lost: by a cancel whose TurnCancelled was lost too, the turn goes on and the cancel may be sent again.
      else if (approval.status === 'denied') drafts.push(deniedResult(state.step, id, call.name, approval.by, approval.reason));
    } else if (state.spec.runner !== 'external' && !command.rerunnable.includes(call.name)) {
      // An external turn's calls run in its runner, not in the lost engine: none of them was cut off.
      drafts.push({
        type: 'ToolCallFinished',
        data: { step: state.step, toolCallId: id, name: call.name, ok: false, error: { code: 'interrupted', message: 'the engine running this call was lost; the call may or may not have taken effect' }, durationMs: 0 },
      });
    }
  }
  const settled = after(next, drafts.slice(1));
  if (stepDone(settled)) return [...drafts, ...boundary(settled, toolBoundary(settled))];
  return drafts;
}

/**
 * An urgent steer (docs/design.md §2, "Urgency"): accepted like any steer,
 * then, unless an earlier interrupt still waits, the step is cut and — once
 * nothing non-interruptible still runs — the queue is delivered FIFO at the
 * boundary `interrupt` and the model is asked again. A second interrupt
 * before the first is delivered cuts nothing: it is delivered at the same point.
 * An interrupt that finds no step to cut (between a step's end and the next
 * request) is an ordinary steer.
 */
function interrupt(command: Extract<TurnCommand, { type: 'Interrupt' }>, state: RunningTurn): TurnEventDraft[] {
  const { steerId, text, onTurnEnd, expiresAt } = command;
  const accepted = submitSteer({ type: 'SubmitSteer', steerId, text, ...(onTurnEnd && { onTurnEnd }), ...(expiresAt && { expiresAt }) }, state);
  if (accepted.length === 0) return [];
  const urgent = (waitingFor: string[]): TurnEventDraft => {
    const queued = accepted[0] as Extract<TurnEventDraft, { type: 'SteerQueued' }>;
    return { type: 'SteerQueued', data: { ...queued.data, urgency: 'interrupt', ...(waitingFor.length && { waitingFor }) } };
  };
  if (interruptPending(state)) return [urgent(stillRunning(state))];
  // The runner writes the answer: it is cut when the runner reports what it had written.
  if (command.cutBy === 'runner' && state.awaiting === 'model') return [urgent([])];
  const { drafts, waitingFor } = cutStep(state, command);
  const decided = [urgent(waitingFor), ...drafts];
  const next = after(state, decided);
  const cut = next.awaiting === 'interrupted' || (next.awaiting === 'tools' && stepDone(next));
  return cut ? [...decided, ...boundary(next, 'interrupt')] : decided;
}

/**
 * The runner's report of the step it stopped (docs/runner-protocol.md, "Interrupts"): the
 * answer it was writing ends `ModelInterrupted`, its calls still running end `interrupted`,
 * and the queue is delivered at the boundary `interrupt`. A step the turn has left, or one no
 * urgent steer waits on (the step's natural end came first), has nothing to cut.
 */
function recordInterruption(command: Extract<TurnCommand, { type: 'RecordInterruption' }>, state: RunningTurn): TurnEventDraft[] {
  if (command.step > state.step) throw new SteerlineError('invalid_request', `step ${command.step} was never requested`);
  if (command.step !== state.step || !interruptPending(state) || (state.awaiting !== 'model' && state.awaiting !== 'tools')) return [];
  const { drafts } = cutStep(state, { partialText: command.partialText, usage: command.usage, uninterruptible: [], elapsedMs: command.elapsedMs });
  return [...drafts, ...boundary(after(state, drafts), 'interrupt')];
}

/** The boundary a tool step reaches: `interrupt` when an urgent steer waits for it, else `tool_results`. */
function toolBoundary(state: RunningTurn): Boundary {
  return interruptPending(state) ? 'interrupt' : 'tool_results';
}

function queueTurn(command: Extract<TurnCommand, { type: 'QueueTurn' }>, state: TurnState): TurnEventDraft[] {
  if (state.status !== 'new') throw new SteerlineError('turn_already_running', `turn ${state.turnId} already exists`);
  const { position, fromTurnId } = command;
  return [{ type: 'TurnQueued', data: { ...specOf(command), position, ...(fromTurnId && { fromTurnId }) } }];
}

function startTurn(command: Extract<TurnCommand, { type: 'StartTurn' }>, state: TurnState): TurnEventDraft[] {
  if (state.status !== 'new' && state.status !== 'queued') throw new SteerlineError('turn_already_running', `turn ${state.turnId} already started`);
  return [
    { type: 'TurnStarted', data: { ...specOf(command), engineId: command.engineId } },
    { type: 'ModelRequested', data: { step: 1, steerIds: [] } },
  ];
}

function recordModelAnswer(command: Extract<TurnCommand, { type: 'RecordModelAnswer' }>, state: RunningTurn): TurnEventDraft[] {
  if (state.awaiting !== 'model' || command.step !== state.step) {
    throw new SteerlineError('invalid_request', `no model request of step ${command.step} is waiting for an answer`);
  }
  const { step, text, toolCalls, usage } = command;
  const responded: TurnEventDraft = { type: 'ModelResponded', data: { step, text, toolCalls, ...(usage ? { usage } : {}) } };
  if (toolCalls.length > 0) {
    const calls = [responded, ...toolCalls.map((c) => requestOrStart(state, step, c))];
    if (!interruptPending(state)) return calls;
    // An external turn's answer that came before its runner heard of the urgent steer: it stands, its calls wait to be stopped (none asks a person).
    const next = after(state, calls);
    const denials = cutStep(next, { uninterruptible: toolCalls.map((c) => c.name) }).drafts;
    const cut = after(next, denials);
    return stepDone(cut) ? [...calls, ...denials, ...boundary(cut, 'interrupt')] : [...calls, ...denials];
  }
  return [responded, ...boundary(after(state, [responded]), 'turn_end', command.nextTurnId)];
}

/** A call of a tool the turn's policy lists waits for a decision; any other starts at once (docs/design.md §9). */
function requestOrStart(state: RunningTurn, step: number, c: ToolCall): TurnEventDraft {
  const data = { step, toolCallId: c.id, name: c.name, args: c.args };
  return needsApproval(state.spec.approvals, c.name) ? { type: 'ToolApprovalRequested', data } : { type: 'ToolCallStarted', data };
}

/**
 * Approved: the call starts. Denied: it finishes with a `denied` error the
 * model reads, and the step's boundary comes when it was the last call. The
 * same decision again is answered without an event; the other one is refused.
 */
function decideApproval(command: Extract<TurnCommand, { type: 'DecideApproval' }>, state: RunningTurn): TurnEventDraft[] {
  const { toolCallId, decision, reason, by } = command;
  const call = state.calls.get(toolCallId);
  const request = call?.approval;
  if (!call || !request) throw new SteerlineError('not_found', `tool call ${toolCallId} of this turn did not ask for approval`, { toolCallId });
  if (request.status !== 'pending') {
    if (request.status === decision) return [];
    throw new SteerlineError('already_decided', `tool call ${toolCallId} was already ${request.status}`, {
      toolCallId,
      decision: request.status,
      by: request.by,
      ...(request.reason !== undefined && { reason: request.reason }),
    });
  }
  const { step, name, args } = call;
  const decided: TurnEventDraft = { type: 'ToolApprovalDecided', data: { step, toolCallId, decision, ...(reason !== undefined && { reason }), by } };
  if (decision === 'approved') return [decided, { type: 'ToolCallStarted', data: { step, toolCallId, name, args } }];
  const finished = deniedResult(step, toolCallId, name, by, reason);
  const next = after(state, [decided, finished]);
  if (!stepDone(next)) return [decided, finished];
  return [decided, finished, ...boundary(next, toolBoundary(next))];
}

function recordToolResult(command: Extract<TurnCommand, { type: 'RecordToolResult' }>, state: RunningTurn): TurnEventDraft[] {
  const { step, toolCallId, name, ok, output, error, fatal, durationMs } = command;
  const call = state.calls.get(toolCallId);
  if (state.awaiting !== 'tools' || step !== state.step || call?.step !== step || call.progress !== 'started') {
    throw new SteerlineError('invalid_request', `tool call ${toolCallId} of step ${step} is not running`);
  }
  const finished: TurnEventDraft = {
    type: 'ToolCallFinished',
    data: { step, toolCallId, name, ok, durationMs, ...(ok ? { output: output ?? null } : { error: error ?? { code: 'tool_failed', message: 'tool failed' } }) },
  };
  const next = after(state, [finished]);
  if (!ok && fatal) {
    const failure = { code: 'tool_failed', message: `tool ${name} failed: ${error?.message ?? 'unknown error'}` };
    return [finished, ...endTurn(next, 'turn_failed', { type: 'TurnFailed', data: { steps: state.step, error: failure } })];
  }
  if (!stepDone(next)) return [finished];
  return [finished, ...boundary(next, toolBoundary(next))];
}

/**
 * A tool boundary or a text-only end: drain the whole queue FIFO into the next
 * model request, or end the turn when a limit says so. At a text-only end only
 * `continue` steers can be drained (docs/design.md §8).
 */
function boundary(state: RunningTurn, kind: Boundary, nextTurnId?: string): TurnEventDraft[] {
  if (kind === 'turn_end') {
    // `drop` and `next_turn` steers never reach this turn's model: settled first, in position order.
    const ends = turnEndDrops(state, nextTurnId);
    if (ends.length > 0) return [...ends, ...boundary(after(state, ends), 'turn_end')];
  }
  const { maxSteps, maxContinuations } = state.spec.limits;
  const textOnlyEnd = kind === 'turn_end';
  if (textOnlyEnd && state.queue.length === 0) {
    return [{ type: 'TurnCompleted', data: { steps: state.step, text: state.lastText } }];
  }
  if (textOnlyEnd && state.continuations >= maxContinuations) {
    return [...dropAll(state, 'continuation_cap'), { type: 'TurnCompleted', data: { steps: state.step, text: state.lastText } }];
  }
  if (state.step >= maxSteps) {
    const end: TurnEventDraft = textOnlyEnd
      ? { type: 'TurnCompleted', data: { steps: state.step, text: state.lastText } }
      : { type: 'TurnFailed', data: { steps: state.step, error: { code: 'max_steps', message: `the turn reached its limit of ${maxSteps} steps` } } };
    return [...dropAll(state, 'max_steps'), end];
  }
  return deliver(state, kind);
}

/** Drains the queue FIFO into the next model request (after any steers already delivered for it). */
function deliver(state: RunningTurn, kind: Boundary): TurnEventDraft[] {
  const requestStep = state.step + 1;
  const afterToolCallIds = kind === 'turn_end' ? [] : finishedCalls(state);
  const deliveries = queuedSteers(state).map(({ steerId, text, position }): TurnEventDraft => ({
    type: 'SteeringDelivered',
    data: { steerId, text, position, step: state.step, boundary: kind, requestStep, afterToolCallIds, rendered: renderSteer(text) },
  }));
  return [...deliveries, { type: 'ModelRequested', data: { step: requestStep, steerIds: [...state.delivering, ...state.queue] } }];
}

/** The state after drafts that do not end the turn, for decisions that span several events. */
function after(state: RunningTurn, drafts: TurnEventDraft[]): RunningTurn {
  const next = drafts.reduce<TurnState>((s, d) => evolve(s, stamp(s, d, { id: '', at: '' })), state);
  if (next.status !== 'running') throw new SteerlineError('internal', `a decision of turn ${state.turnId} ended it half-way`);
  return next;
}

export interface StampContext {
  id: string;
  at: string;
}

/** Gives a draft its envelope: the turn's identity, the next `seq`, an id and a time. */
export function stamp(state: TurnState, draft: TurnEventDraft, ctx: StampContext): TurnEvent {
  return {
    id: ctx.id,
    type: draft.type,
    version: eventVersion(draft.type),
    tenantId: state.tenantId,
    conversationId: state.conversationId,
    turnId: state.turnId,
    seq: state.seq + 1,
    at: ctx.at,
    data: draft.data,
  } as TurnEvent;
}

/** Decides a command and applies its events: the one step the runner and the tests take. */
export function execute(state: TurnState, command: TurnCommand, context: () => StampContext): { state: TurnState; events: TurnEvent[] } {
  const events: TurnEvent[] = [];
  let next = state;
  for (const draft of decide(command, state)) {
    const event = stamp(next, draft, context());
    events.push(event);
    next = evolve(next, event);
  }
  return { state: next, events };
}

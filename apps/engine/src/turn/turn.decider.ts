import {
  EVENT_VERSION,
  SteerlineError,
  normalizeSteerText,
  renderSteer,
  type Boundary,
  type DropReason,
  type EventData,
  type TurnEvent,
} from '@steerline/contracts';
import type { TurnCommand } from './turn.commands';
import type { TurnState } from './turn.state';
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
  if (state.status !== 'running') {
    if (command.type === 'WithdrawSteer') return withdraw(command.steerId, state);
    throw new SteerlineError('turn_not_running', `turn ${state.turnId || 'unknown'} is not running`);
  }
  switch (command.type) {
    case 'SubmitSteer':
      return submitSteer(command, state);
    case 'WithdrawSteer':
      return withdraw(command.steerId, state);
    case 'RecordModelAnswer':
      return recordModelAnswer(command, state);
    case 'RecordToolResult':
      return recordToolResult(command, state);
    case 'FailTurn':
      return [...dropAll(state, 'turn_failed'), { type: 'TurnFailed', data: { steps: state.step, error: { code: command.code, message: command.message } } }];
    case 'CancelTurn':
      return [...dropAll(state, 'turn_cancelled'), { type: 'TurnCancelled', data: { steps: state.step, reason: command.reason } }];
    case 'ResumeTurn':
      return resumeTurn(command, state);
    case 'AbandonTurn':
      return [
        ...dropAll(state, command.reason),
        { type: 'TurnFailed', data: { steps: state.step, error: { code: command.reason, message: abandonMessage[command.reason] } } },
      ];
  }
}

const abandonMessage = {
  engine_lost: 'the engine that ran this turn was lost',
  engine_shutdown: 'the engine that ran this turn shut down',
} as const;

/**
 * A turn picked up from its log by another engine. What was decided before the
 * crash but not yet appended is decided again here: the first request, the
 * calls of an answer whose starts were cut off, a boundary whose events were
 * not all written. A call that started and never finished runs again when its
 * tool is idempotent (the runner reruns it), otherwise it ends `interrupted`.
 * Delivered steers are in the log, so none is delivered twice.
 */
function resumeTurn(command: Extract<TurnCommand, { type: 'ResumeTurn' }>, state: TurnState): TurnEventDraft[] {
  if (state.resumes >= command.limit) {
    const message = `the turn's engine was lost ${state.resumes + 1} times; it is not resumed more than ${command.limit} times`;
    return [...dropAll(state, 'engine_lost'), { type: 'TurnFailed', data: { steps: state.step, error: { code: 'engine_lost', message } } }];
  }
  const resumed: TurnEventDraft = { type: 'TurnResumed', data: { engineId: command.engineId, previousEngineId: state.engineId, attempt: state.resumes + 1 } };
  const next = after(state, [resumed]);
  // The crash cut a boundary short: some of its deliveries are in the log, its request is not. The decision stands.
  if (state.delivering.length) return [resumed, ...deliver(next, state.awaiting === 'nothing' ? 'turn_end' : 'tool_results')];
  if (state.step === 0) return [resumed, { type: 'ModelRequested', data: { step: 1, steerIds: [] } }];
  if (state.awaiting === 'nothing') return [resumed, ...boundary(next, 'turn_end')];
  if (state.awaiting !== 'tools') return [resumed];
  const drafts: TurnEventDraft[] = [resumed];
  for (const id of state.toolCalls) {
    const call = state.calls.get(id)!;
    if (!state.started.includes(id)) drafts.push({ type: 'ToolCallStarted', data: { step: state.step, toolCallId: id, name: call.name, args: call.args } });
    else if (!state.finished.includes(id) && !command.rerunnable.includes(call.name)) {
      drafts.push({
        type: 'ToolCallFinished',
        data: { step: state.step, toolCallId: id, name: call.name, ok: false, error: { code: 'interrupted', message: 'the engine running this call was lost; the call may or may not have taken effect' }, durationMs: 0 },
      });
    }
  }
  const settled = after(next, drafts.slice(1));
  if (settled.finished.length === settled.toolCalls.length) return [...drafts, ...boundary(settled, 'tool_results')];
  return drafts;
}

function startTurn(command: Extract<TurnCommand, { type: 'StartTurn' }>, state: TurnState): TurnEventDraft[] {
  if (state.status !== 'new') throw new SteerlineError('turn_already_running', `turn ${state.turnId} already started`);
  const { prompt, model, limits, engineId } = command;
  return [
    { type: 'TurnStarted', data: { prompt, model, limits, engineId } },
    { type: 'ModelRequested', data: { step: 1, steerIds: [] } },
  ];
}

function submitSteer(command: Extract<TurnCommand, { type: 'SubmitSteer' }>, state: TurnState): TurnEventDraft[] {
  // A resubmitted id is the same steer: same receipt, no second event (docs/design.md §2.11).
  if (state.steers.has(command.steerId)) return [];
  const text = normalizeSteerText(command.text);
  const maxQueued = state.limits!.maxQueued;
  if (state.queue.length >= maxQueued) {
    throw new SteerlineError('queue_full', `${maxQueued} steers already wait for the next boundary`, { maxQueued });
  }
  return [{ type: 'SteerQueued', data: { steerId: command.steerId, text, position: state.nextPosition, queueDepth: state.queue.length + 1 } }];
}

function withdraw(steerId: string, state: TurnState): TurnEventDraft[] {
  const steer = state.steers.get(steerId);
  if (!steer) throw new SteerlineError('not_found', `steer ${steerId} is not part of this turn`);
  if (steer.status === 'delivered') throw new SteerlineError('already_delivered', 'the model already has this steer', { steerId, step: steer.step });
  if (steer.status === 'dropped') return [];
  return [{ type: 'SteerDropped', data: { steerId, text: steer.text, position: steer.position, reason: 'withdrawn' } }];
}

function recordModelAnswer(command: Extract<TurnCommand, { type: 'RecordModelAnswer' }>, state: TurnState): TurnEventDraft[] {
  if (state.awaiting !== 'model' || command.step !== state.step) {
    throw new SteerlineError('invalid_request', `no model request of step ${command.step} is waiting for an answer`);
  }
  const { step, text, toolCalls, usage } = command;
  const responded: TurnEventDraft = { type: 'ModelResponded', data: { step, text, toolCalls, ...(usage ? { usage } : {}) } };
  if (toolCalls.length > 0) {
    return [responded, ...toolCalls.map((c): TurnEventDraft => ({ type: 'ToolCallStarted', data: { step, toolCallId: c.id, name: c.name, args: c.args } }))];
  }
  return [responded, ...boundary(after(state, [responded]), 'turn_end')];
}

function recordToolResult(command: Extract<TurnCommand, { type: 'RecordToolResult' }>, state: TurnState): TurnEventDraft[] {
  const { step, toolCallId, name, ok, output, error, fatal, durationMs } = command;
  if (state.awaiting !== 'tools' || step !== state.step || !state.toolCalls.includes(toolCallId) || state.finished.includes(toolCallId)) {
    throw new SteerlineError('invalid_request', `tool call ${toolCallId} of step ${step} is not running`);
  }
  const finished: TurnEventDraft = {
    type: 'ToolCallFinished',
    data: { step, toolCallId, name, ok, durationMs, ...(ok ? { output: output ?? null } : { error: error ?? { code: 'tool_failed', message: 'tool failed' } }) },
  };
  const next = after(state, [finished]);
  if (!ok && fatal) {
    const failure = { code: 'tool_failed', message: `tool ${name} failed: ${error?.message ?? 'unknown error'}` };
    return [finished, ...dropAll(next, 'turn_failed'), { type: 'TurnFailed', data: { steps: state.step, error: failure } }];
  }
  if (next.finished.length < next.toolCalls.length) return [finished];
  return [finished, ...boundary(next, 'tool_results')];
}

/**
 * A tool boundary or a text-only end: drain the whole queue FIFO into the next
 * model request, or end the turn when a limit says so.
 */
function boundary(state: TurnState, kind: Boundary): TurnEventDraft[] {
  const { maxSteps, maxContinuations } = state.limits!;
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
function deliver(state: TurnState, kind: Boundary): TurnEventDraft[] {
  const requestStep = state.step + 1;
  const afterToolCallIds = kind === 'turn_end' ? [] : [...state.finished];
  const deliveries = state.queue.map((steerId): TurnEventDraft => {
    const s = state.steers.get(steerId)!;
    return {
      type: 'SteeringDelivered',
      data: { steerId, text: s.text, position: s.position, step: state.step, boundary: kind, requestStep, afterToolCallIds, rendered: renderSteer(s.text) },
    };
  });
  return [...deliveries, { type: 'ModelRequested', data: { step: requestStep, steerIds: [...state.delivering, ...state.queue] } }];
}

/** Drops every queued steer, in position order, with one reason. */
function dropAll(state: TurnState, reason: DropReason): TurnEventDraft[] {
  return state.queue.map((steerId) => {
    const s = state.steers.get(steerId)!;
    return { type: 'SteerDropped', data: { steerId, text: s.text, position: s.position, reason } };
  });
}

/** The state after drafts, for decisions that span several events. */
function after(state: TurnState, drafts: TurnEventDraft[]): TurnState {
  return drafts.reduce((s, d) => evolve(s, stamp(s, d, { id: '', at: '' })), state);
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
    version: EVENT_VERSION,
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

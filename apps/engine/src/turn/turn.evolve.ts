import type { TurnEvent } from '@steerline/contracts';
import type { GrowingMap } from './growing-map';
import { emptyRun, hasRun, specOf, type EndedTurn, type RunningTurn, type SteerRecord, type ToolCallRecord, type TurnState } from './turn.state';

type Started = RunningTurn | EndedTurn;

function withSteer(state: Started, record: SteerRecord): GrowingMap<string, SteerRecord> {
  return state.steers.set(record.steerId, record);
}

function withCall(state: Started, toolCallId: string, change: (call: ToolCallRecord) => ToolCallRecord): ReadonlyMap<string, ToolCallRecord> {
  const call = state.calls.get(toolCallId);
  return call ? new Map(state.calls).set(toolCallId, change(call)) : state.calls;
}

/** Applies one event to the state. Pure: the same events always give the same state. */
export function evolve(state: TurnState, event: TurnEvent): TurnState {
  const identity = { turnId: event.turnId, tenantId: event.tenantId, conversationId: event.conversationId, seq: event.seq };
  switch (event.type) {
    case 'TurnQueued': {
      const { position, fromTurnId } = event.data;
      return { ...identity, status: 'queued', spec: specOf(event.data), position, ...(fromTurnId && { fromTurnId }) };
    }
    case 'TurnStarted':
      return { ...identity, status: 'running', spec: specOf(event.data), ...emptyRun(event.data.engineId) };
    case 'TurnCancelled':
      // A queued turn cancelled before it started ends with an empty run.
      if (state.status === 'queued') return { ...identity, status: 'cancelled', spec: state.spec, ...emptyRun() };
      return hasRun(state) ? { ...state, seq: event.seq, status: 'cancelled', awaiting: 'nothing' } : { ...state, seq: event.seq };
    case 'TurnCompleted':
    case 'TurnFailed':
      if (!hasRun(state)) return { ...state, seq: event.seq };
      return { ...state, seq: event.seq, status: event.type === 'TurnCompleted' ? 'completed' : 'failed', awaiting: 'nothing' };
  }
  // Every other event belongs to a turn that started; on any other state it only moves `seq`.
  if (!hasRun(state)) return { ...state, seq: event.seq };
  return evolveRun(state, event);
}

function evolveRun(state: Started, event: TurnEvent): Started {
  // Each case copies the state once, with the event's seq (not a copy first, then a copy of the copy).
  const seq = event.seq;
  switch (event.type) {
    case 'TurnResumed':
      return { ...state, seq, engineId: event.data.engineId, resumes: event.data.attempt };
    case 'ModelRequested':
      // A request after a text-only answer is a continuation (docs/design.md §2.6).
      return {
        ...state,
        seq,
        step: event.data.step,
        awaiting: 'model',
        delivering: [],
        continuations: state.responded && state.awaiting === 'nothing' ? state.continuations + 1 : state.continuations,
      };
    case 'ModelResponded': {
      const { step, toolCalls } = event.data;
      const answered = new Set(toolCalls.map((c) => c.id));
      // Older steps' calls stay only for their approvals; a reused id is the latest call's, in answer order.
      const calls = new Map([...state.calls].filter(([id, c]) => !answered.has(id) && c.approval !== undefined));
      for (const c of toolCalls) calls.set(c.id, { toolCallId: c.id, step, name: c.name, args: c.args, progress: 'answered' });
      return { ...state, seq, responded: true, lastText: event.data.text, awaiting: toolCalls.length ? 'tools' : 'nothing', calls };
    }
    case 'ModelInterrupted':
      // Never an answer: no calls, no text of the turn's; the boundary `interrupt` follows (docs/design.md §2, "Urgency").
      return { ...state, seq, awaiting: 'interrupted' };
    case 'ToolCallStarted':
      return { ...state, seq, calls: withCall(state, event.data.toolCallId, (c) => ({ ...c, progress: 'started' })) };
    case 'ToolApprovalRequested':
      return { ...state, seq, calls: withCall(state, event.data.toolCallId, (c) => ({ ...c, approval: { status: 'pending', requestedAt: event.at } })) };
    case 'ToolApprovalDecided': {
      const { decision, reason, by } = event.data;
      return {
        ...state,
        seq,
        calls: withCall(state, event.data.toolCallId, (c) => ({ ...c, approval: { status: decision, requestedAt: c.approval?.requestedAt ?? event.at, by, ...(reason !== undefined && { reason }) } })),
      };
    }
    case 'ToolCallFinished':
      return { ...state, seq, calls: withCall(state, event.data.toolCallId, (c) => ({ ...c, progress: 'finished', finishedSeq: event.seq })) };
    case 'SteerQueued': {
      const { steerId, text, position, onTurnEnd, expiresAt, urgency, waitingFor } = event.data;
      const record: SteerRecord = { steerId, text, position, status: 'queued', onTurnEnd: onTurnEnd ?? 'continue', ...(expiresAt && { expiresAt }), ...(urgency && { urgency }), ...(waitingFor && { waitingFor }) };
      return { ...state, seq, queue: [...state.queue, steerId], nextPosition: position + 1, steers: withSteer(state, record) };
    }
    case 'SteerEdited': {
      const record = state.steers.get(event.data.steerId);
      return record ? { ...state, seq, steers: withSteer(state, { ...record, text: event.data.text }) } : { ...state, seq };
    }
    case 'SteeringDelivered': {
      const { steerId, step, boundary, requestStep } = event.data;
      const record = state.steers.get(steerId);
      if (!record) return { ...state, seq };
      return {
        ...state,
        seq,
        queue: state.queue.filter((id) => id !== steerId),
        delivering: [...state.delivering, steerId],
        steers: withSteer(state, { ...record, status: 'delivered', step, boundary, requestStep }),
      };
    }
    case 'SteerDropped': {
      const { steerId, reason, nextTurnId } = event.data;
      const record = state.steers.get(steerId);
      if (!record) return { ...state, seq };
      return {
        ...state,
        seq,
        queue: state.queue.filter((id) => id !== steerId),
        steers: withSteer(state, { ...record, status: 'dropped', reason, ...(nextTurnId && { nextTurnId }) }),
        ...(nextTurnId && { nextTurnId }),
      };
    }
    default:
      return { ...state, seq };
  }
}

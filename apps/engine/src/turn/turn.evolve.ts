import { agentFieldsOf, type TurnEvent } from '@steerline/contracts';
import type { SteerRecord, TurnState } from './turn.state';

function withSteer(state: TurnState, record: SteerRecord): ReadonlyMap<string, SteerRecord> {
  const steers = new Map(state.steers);
  steers.set(record.steerId, record);
  return steers;
}

/** Applies one event to the state. Pure: the same events always give the same state. */
export function evolve(state: TurnState, event: TurnEvent): TurnState {
  const next: TurnState = { ...state, seq: event.seq };
  switch (event.type) {
    case 'TurnQueued':
      return {
        ...next,
        status: 'queued',
        turnId: event.turnId,
        tenantId: event.tenantId,
        conversationId: event.conversationId,
        model: event.data.model,
        limits: event.data.limits,
        queuedPrompt: event.data.prompt,
        ...(event.data.approvals && { approvalPolicy: event.data.approvals }),
        agentFields: agentFieldsOf(event.data),
      };
    case 'TurnStarted':
      return {
        ...next,
        status: 'running',
        turnId: event.turnId,
        tenantId: event.tenantId,
        conversationId: event.conversationId,
        model: event.data.model,
        limits: event.data.limits,
        ...(event.data.approvals && { approvalPolicy: event.data.approvals }),
        agentFields: agentFieldsOf(event.data),
        engineId: event.data.engineId,
      };
    case 'TurnResumed':
      return { ...next, engineId: event.data.engineId, resumes: event.data.attempt };
    case 'ModelRequested':
      // A request after a text-only answer is a continuation (docs/design.md §2.6).
      return {
        ...next,
        step: event.data.step,
        awaiting: 'model',
        toolCalls: [],
        finished: [],
        started: [],
        delivering: [],
        continuations: state.responded && state.awaiting === 'nothing' ? state.continuations + 1 : state.continuations,
      };
    case 'ModelResponded':
      return {
        ...next,
        responded: true,
        lastText: event.data.text,
        awaiting: event.data.toolCalls.length ? 'tools' : 'nothing',
        toolCalls: event.data.toolCalls.map((c) => c.id),
        finished: [],
        started: [],
        calls: new Map(event.data.toolCalls.map((c) => [c.id, { name: c.name, args: c.args }])),
      };
    case 'ToolCallStarted':
      return { ...next, started: [...state.started, event.data.toolCallId] };
    case 'ToolApprovalRequested': {
      const { toolCallId, step, name, args } = event.data;
      return { ...next, approvals: new Map(state.approvals).set(toolCallId, { toolCallId, step, name, args, status: 'pending', requestedAt: event.at }) };
    }
    case 'ToolApprovalDecided': {
      const { toolCallId, decision, reason, by } = event.data;
      const record = state.approvals.get(toolCallId)!;
      return { ...next, approvals: new Map(state.approvals).set(toolCallId, { ...record, status: decision, by, ...(reason !== undefined && { reason }) }) };
    }
    case 'ToolCallFinished':
      return { ...next, finished: [...state.finished, event.data.toolCallId] };
    case 'SteerQueued': {
      const { steerId, text, position, onTurnEnd, expiresAt } = event.data;
      return {
        ...next,
        queue: [...state.queue, steerId],
        nextPosition: position + 1,
        steers: withSteer(state, { steerId, text, position, status: 'queued', onTurnEnd: onTurnEnd ?? 'continue', ...(expiresAt && { expiresAt }) }),
      };
    }
    case 'SteerEdited': {
      const record = state.steers.get(event.data.steerId)!;
      return { ...next, steers: withSteer(state, { ...record, text: event.data.text }) };
    }
    case 'SteeringDelivered': {
      const { steerId, step, boundary, requestStep } = event.data;
      const record = state.steers.get(steerId)!;
      return {
        ...next,
        queue: state.queue.filter((id) => id !== steerId),
        delivering: [...state.delivering, steerId],
        steers: withSteer(state, { ...record, status: 'delivered', step, boundary, requestStep }),
      };
    }
    case 'SteerDropped': {
      const { steerId, reason, nextTurnId } = event.data;
      const record = state.steers.get(steerId)!;
      return {
        ...next,
        queue: state.queue.filter((id) => id !== steerId),
        steers: withSteer(state, { ...record, status: 'dropped', reason, ...(nextTurnId && { nextTurnId }) }),
        ...(nextTurnId && { nextTurnId }),
      };
    }
    case 'TurnCompleted':
      return { ...next, status: 'completed', awaiting: 'nothing' };
    case 'TurnCancelled':
      return { ...next, status: 'cancelled', awaiting: 'nothing' };
    case 'TurnFailed':
      return { ...next, status: 'failed', awaiting: 'nothing' };
  }
}

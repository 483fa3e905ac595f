import { isSteerEventType, messagesOf, type SteerlineEvent, type SteerStatus, type TurnEvent } from '@steerline/contracts';
import type { ConversationRow, MessageRow, SteerRow, TurnRow } from './rows';

/*
 * One pure evolve function per read model: (row | undefined, event) -> row | undefined.
 * A function returns its input unchanged (the same object) when the event does
 * not concern it, so callers can tell a change by identity.
 */

export function evolveConversation(conversation: ConversationRow | undefined, event: SteerlineEvent): ConversationRow | undefined {
  if (conversation) return conversation;
  // A turn start creates its conversation too: a log without ConversationCreated
  // (written by an older engine, or trimmed) still yields a readable transcript.
  if (event.type === 'ConversationCreated' || event.type === 'TurnStarted' || event.type === 'TurnQueued') {
    return { id: event.conversationId, tenantId: event.tenantId, createdAt: event.at, messageCount: 0 };
  }
  return undefined;
}

/** The messages an event adds to the transcript, numbered from the conversation's count. */
export function appendMessages(conversation: ConversationRow, event: SteerlineEvent): { conversation: ConversationRow; messages: MessageRow[] } {
  const added = messagesOf(event);
  if (added.length === 0) return { conversation, messages: [] };
  const messages = added.map((m, i): MessageRow => ({
    conversationId: conversation.id,
    ordinal: conversation.messageCount + i,
    role: m.role,
    content: m.content,
    turnId: m.turnId,
    step: m.role === 'user' ? null : m.step,
    steerId: m.role === 'user' ? (m.steerId ?? null) : null,
    toolCallId: m.role === 'tool' ? m.toolCallId : null,
    toolCalls: m.role === 'assistant' ? (m.toolCalls ?? null) : null,
  }));
  return { conversation: { ...conversation, messageCount: conversation.messageCount + added.length }, messages };
}

export function evolveTurn(turn: TurnRow | undefined, event: TurnEvent): TurnRow | undefined {
  if (event.type === 'TurnStarted' || event.type === 'TurnQueued') {
    // A queued turn's row exists from TurnQueued; its start makes it running, from then.
    if (turn) return event.type === 'TurnStarted' && turn.status === 'queued' ? { ...turn, status: 'running', startedAt: event.at, lastEventSeq: event.seq } : turn;
    const { prompt, model, limits } = event.data;
    return {
      id: event.turnId,
      conversationId: event.conversationId,
      tenantId: event.tenantId,
      status: event.type === 'TurnQueued' ? 'queued' : 'running',
      steps: 0,
      prompt,
      model,
      limits,
      text: null,
      error: null,
      cancelReason: null,
      resumes: 0,
      queued: 0,
      delivered: 0,
      dropped: 0,
      pendingApprovals: [],
      startedAt: event.at,
      endedAt: null,
      lastEventSeq: event.seq,
    };
  }
  if (!turn) return undefined;
  const seen = { ...turn, lastEventSeq: Math.max(turn.lastEventSeq, event.seq) };
  switch (event.type) {
    case 'TurnResumed':
      return { ...seen, resumes: Math.max(turn.resumes, event.data.attempt) };
    case 'ModelResponded':
      return { ...seen, steps: Math.max(turn.steps, event.data.step) };
    case 'ToolApprovalRequested': {
      const { toolCallId, step, name, args } = event.data;
      return { ...seen, pendingApprovals: [...seen.pendingApprovals.filter((a) => a.toolCallId !== toolCallId), { toolCallId, step, name, args, requestedAt: event.at }] };
    }
    case 'ToolApprovalDecided':
      return { ...seen, pendingApprovals: seen.pendingApprovals.filter((a) => a.toolCallId !== event.data.toolCallId) };
    case 'TurnCompleted':
      return { ...seen, status: 'completed', steps: event.data.steps, text: event.data.text, endedAt: event.at };
    case 'TurnCancelled':
      return { ...seen, status: 'cancelled', steps: event.data.steps, cancelReason: event.data.reason, endedAt: event.at };
    case 'TurnFailed':
      return { ...seen, status: 'failed', steps: event.data.steps, error: event.data.error, endedAt: event.at };
    default:
      // Steer counts follow the steers' own transitions (see countSteer).
      return seen;
  }
}

type SteerEvent = Extract<TurnEvent, { type: 'SteerQueued' | 'SteerEdited' | 'SteeringDelivered' | 'SteerDropped' }>;

export function isSteerEvent(event: SteerlineEvent): event is SteerEvent {
  return isSteerEventType(event.type);
}

export function evolveSteer(steer: SteerRow | undefined, event: SteerEvent): SteerRow {
  // Settlements carry text and position, so a steer whose SteerQueued is missing
  // is still recorded; the first settlement wins (I2 makes a second one a log defect).
  if (!steer && event.type === 'SteerEdited') throw new Error('unreachable: an edit without its steer is applied by applyEvent as an orphan');
  const first = event as Exclude<SteerEvent, { type: 'SteerEdited' }>;
  const base: SteerRow = steer ?? {
    id: first.data.steerId,
    turnId: first.turnId,
    conversationId: first.conversationId,
    tenantId: first.tenantId,
    text: first.data.text,
    position: first.data.position,
    status: 'queued',
    reason: null,
    step: null,
    boundary: null,
    requestStep: null,
    nextTurnId: null,
    queuedAt: event.at,
    settledAt: null,
  };
  if (base.status !== 'queued') return base;
  switch (event.type) {
    case 'SteerQueued':
      return base;
    case 'SteerEdited':
      return { ...base, text: event.data.text };
    case 'SteeringDelivered': {
      const { step, boundary, requestStep, text } = event.data;
      return { ...base, text, status: 'delivered', step, boundary, requestStep, settledAt: event.at };
    }
    case 'SteerDropped':
      return { ...base, text: event.data.text, status: 'dropped', reason: event.data.reason, nextTurnId: event.data.nextTurnId ?? null, settledAt: event.at };
  }
}

/** Moves one steer between the turn's counters; counting transitions keeps the counts idempotent. */
export function countSteer(turn: TurnRow, before: SteerStatus | undefined, after: SteerStatus): TurnRow {
  if (before === after) return turn;
  const next = { ...turn };
  if (before) next[before] -= 1;
  next[after] += 1;
  return next;
}

import type { ChatMessage, Receipt, SteerView, TurnView } from '@steerline/contracts';
import type { MessageEntity, SteerEntity, TurnEntity } from './entities';

/*
 * Rows to the contract's view shapes. Optional fields are left out rather than
 * set to null or undefined, so a view serialises exactly as its schema says.
 */

export function toTurnView(t: TurnEntity): TurnView {
  return {
    id: t.id,
    conversationId: t.conversationId,
    status: t.status,
    steps: t.steps,
    prompt: t.prompt,
    model: t.model,
    limits: t.limits,
    ...(t.text !== null && { text: t.text }),
    ...(t.error !== null && { error: t.error }),
    ...(t.cancelReason !== null && { cancelReason: t.cancelReason }),
    resumes: t.resumes,
    steers: { queued: t.queued, delivered: t.delivered, dropped: t.dropped },
    pendingApprovals: t.pendingApprovals ?? [],
    startedAt: t.startedAt.toISOString(),
    ...(t.endedAt !== null && { endedAt: t.endedAt.toISOString() }),
  };
}

export function toSteerView(s: SteerEntity): SteerView {
  return {
    id: s.id,
    turnId: s.turnId,
    text: s.text,
    position: s.position,
    status: s.status,
    ...(s.reason !== null && { reason: s.reason }),
    ...(s.step !== null && { step: s.step }),
    ...(s.boundary !== null && { boundary: s.boundary }),
    ...(s.requestStep !== null && { requestStep: s.requestStep }),
    ...(s.nextTurnId !== null && { nextTurnId: s.nextTurnId }),
    queuedAt: s.queuedAt.toISOString(),
    ...(s.settledAt !== null && { settledAt: s.settledAt.toISOString() }),
  };
}

export function toReceipt(s: SteerEntity): Receipt {
  return {
    steerId: s.id,
    turnId: s.turnId,
    status: s.status,
    position: s.position,
    text: s.text,
    ...(s.step !== null && { step: s.step }),
    ...(s.boundary !== null && { boundary: s.boundary }),
    ...(s.requestStep !== null && { requestStep: s.requestStep }),
    ...(s.reason !== null && { reason: s.reason }),
    ...(s.nextTurnId !== null && { nextTurnId: s.nextTurnId }),
  };
}

export function toChatMessage(m: Pick<MessageEntity, 'role' | 'content' | 'turnId' | 'step' | 'steerId' | 'toolCallId' | 'toolCalls'>): ChatMessage {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: m.content, turnId: m.turnId, ...(m.steerId !== null && { steerId: m.steerId }) };
    case 'assistant':
      return { role: 'assistant', content: m.content, turnId: m.turnId, step: m.step!, ...(m.toolCalls !== null && { toolCalls: m.toolCalls }) };
    case 'tool':
      return { role: 'tool', content: m.content, turnId: m.turnId, step: m.step!, toolCallId: m.toolCallId! };
  }
}

import { DEFAULT_LIMITS, EVENT_VERSION, type ModelSpec, type SteerlineEvent, type TurnEvent } from '@steerline/contracts';
import { specification } from '../../../../test/support/decider-specification';
import type { TurnEventDraft } from '../turn/turn.decider';
import type { TurnSpec } from '../turn/turn.state';
import type { ConversationCommand } from './conversation.commands';
import { decide, stampAll, type ConversationDraft } from './conversation.decider';
import { evolve } from './conversation.evolve';
import { initialConversation, type ConversationState } from './conversation.state';

/** Test helpers: a conversation's facts and commands, written the way the specs read. */
export const CONVERSATION_ID = '0190d000-0000-7000-8000-000000000001';
export const TENANT = 'default';
export const turnId = (n: number) => `0190d000-0000-7000-8000-${String(100 + n).padStart(12, '0')}`;
export const steerId = (n: number) => `0190d000-0000-7000-8000-${String(900 + n).padStart(12, '0')}`;

const model: ModelSpec = { provider: 'scripted', name: 'scripted', script: [] };
export const spec = (prompt: string): TurnSpec => ({ prompt, model, limits: DEFAULT_LIMITS });

/** A fact of the conversation: its creation, or a turn's event without its envelope. */
export type Fact = ConversationDraft | { type: 'ConversationCreated' };

let ids = 0;
const context = () => ({ id: `0190d000-0000-7000-8000-${String(5000 + ++ids).padStart(12, '0')}`, at: '2026-01-01T00:00:00.000Z' });

export function created(): SteerlineEvent {
  return { id: context().id, type: 'ConversationCreated', version: EVENT_VERSION, tenantId: TENANT, conversationId: CONVERSATION_ID, turnId: null, seq: 0, at: context().at, data: {} } as SteerlineEvent;
}

/** Applies one fact, stamped as the engine would. */
export function applyFact(state: ConversationState, fact: Fact): ConversationState {
  return fact.type === 'ConversationCreated' ? evolve(state, created()) : stampAll(state, [fact], context).state;
}

/** The conversation's decider as a given/when/then specification. */
export const given = specification<ConversationCommand, Fact, ConversationState, ConversationDraft>({
  initialState: initialConversation,
  evolve: applyFact,
  decide,
});

/** The conversation after facts; with the stamped events, for the log-level checks. */
export function logOf(facts: Fact[]): { state: ConversationState; events: TurnEvent[] } {
  let state = initialConversation();
  const events: TurnEvent[] = [];
  for (const fact of facts) {
    if (fact.type === 'ConversationCreated') state = evolve(state, created());
    else {
      const stamped = stampAll(state, [fact], context);
      state = stamped.state;
      events.push(...stamped.events);
    }
  }
  return { state, events };
}

const of = (n: number, draft: TurnEventDraft): ConversationDraft => ({ ...draft, turnId: turnId(n) });

export const conversationCreated: Fact = { type: 'ConversationCreated' };
export const turnStarted = (n: number, engineId = 'engine-a', prompt = `prompt ${n}`) => [
  of(n, { type: 'TurnStarted', data: { ...spec(prompt), engineId } }),
  of(n, { type: 'ModelRequested', data: { step: 1, steerIds: [] } }),
];
export const turnQueued = (n: number, position: number, prompt = `prompt ${n}`, fromTurnId?: string) =>
  of(n, { type: 'TurnQueued', data: { ...spec(prompt), position, ...(fromTurnId && { fromTurnId }) } });
export const turnCancelled = (n: number, reason = 'never mind', steps = 0) => of(n, { type: 'TurnCancelled', data: { steps, reason } });
export const turnResumed = (n: number, engineId: string, previousEngineId: string, attempt = 1) => of(n, { type: 'TurnResumed', data: { engineId, previousEngineId, attempt } });
export const answered = (n: number, step: number, text: string, toolCalls: { id: string; name: string }[] = []) =>
  of(n, { type: 'ModelResponded', data: { step, text, toolCalls: toolCalls.map((c) => ({ ...c, args: {} })) } });
export const toolStarted = (n: number, step: number, toolCallId: string, name = 'sleep') => of(n, { type: 'ToolCallStarted', data: { step, toolCallId, name, args: {} } });
export const completed = (n: number, steps: number, text: string) => of(n, { type: 'TurnCompleted', data: { steps, text } });
export const steerQueued = (n: number, s: number, text: string, position: number, onTurnEnd?: 'next_turn' | 'drop') =>
  of(n, { type: 'SteerQueued', data: { steerId: steerId(s), text, position, queueDepth: position, ...(onTurnEnd && { onTurnEnd }) } });
export const movedToNextTurn = (n: number, s: number, text: string, position: number, nextTurnId: string) =>
  of(n, { type: 'SteerDropped', data: { steerId: steerId(s), text, position, reason: 'moved_to_next_turn', nextTurnId } });
/** A turn that ran one text-only step and completed. */
export const ranAndCompleted = (n: number, engineId = 'engine-a') => [...turnStarted(n, engineId), answered(n, 1, `done ${n}`), completed(n, 1, `done ${n}`)];

export const start = (n: number, whenBusy: 'reject' | 'queue' = 'reject', engineId = 'engine-a'): Extract<ConversationCommand, { type: 'StartTurn' }> => ({
  type: 'StartTurn',
  turnId: turnId(n),
  tenantId: TENANT,
  engineId,
  whenBusy,
  ...spec(`prompt ${n}`),
});
export const cancelQueued = (n: number, reason = 'never mind'): Extract<ConversationCommand, { type: 'CancelQueuedTurn' }> => ({ type: 'CancelQueuedTurn', turnId: turnId(n), tenantId: TENANT, reason });
export const advance = (engineId = 'engine-a'): ConversationCommand => ({ type: 'AdvanceConversation', engineId });
export const FOLLOW_UP = '0190d000-0000-7000-8000-0000000000f1';
export const adopt = (orphan: number, orphanEngine: string, engineId = 'engine-b', limit = 3): ConversationCommand => ({
  type: 'AdoptConversation',
  orphan: { turnId: turnId(orphan), engineId: orphanEngine },
  engineId,
  limit,
  rerunnable: ['sleep'],
  nextTurnId: FOLLOW_UP,
});

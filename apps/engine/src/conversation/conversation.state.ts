import type { TurnState } from '../turn/turn.state';

/** What every phase of an existing conversation knows: its live turns and its queue. */
interface Known {
  conversationId: string;
  tenantId: string;
  /**
   * The turns that still matter to a decision: the running one, the queued
   * ones, and the one that ended last (its follow-up). Older turns are dropped.
   */
  turns: ReadonlyMap<string, TurnState>;
  /** Turns queued (TurnQueued, neither started nor cancelled), oldest first: the order they start in. */
  queue: readonly string[];
  /** The turn that ended last, if any. */
  lastEnded?: string;
}

/**
 * A conversation as its events tell it, in phases (docs/design.md §8, §10):
 * - `none`: no ConversationCreated — the conversation does not exist;
 * - `idle`: no turn runs and none waits: a turn may start;
 * - `running`: one turn runs; others may be queued behind it;
 * - `between`: no turn runs, yet one waits — turns are queued, or the turn that
 *   ended moved steers to a follow-up that is not queued yet. The next turn is
 *   about to start; an engine killed here left it to the adopter.
 */
export type ConversationState = { phase: 'none' } | (Known & { phase: 'idle' }) | (Known & { phase: 'running'; running: string }) | (Known & { phase: 'between' });

export type KnownConversation = Exclude<ConversationState, { phase: 'none' }>;

export function initialConversation(): ConversationState {
  return { phase: 'none' };
}

/** The follow-up turn the ended turn moved steers to, when the log has no TurnQueued for it yet. */
export function missingFollowUp(state: Known): string | undefined {
  const ended = state.lastEnded ? state.turns.get(state.lastEnded) : undefined;
  if (!ended || ended.status === 'new' || ended.status === 'queued' || !ended.nextTurnId) return undefined;
  return state.turns.has(ended.nextTurnId) ? undefined : ended.nextTurnId;
}

/** The turn that runs, or the first one queued: a new turn must wait for it. */
export function busyTurn(state: ConversationState): string | undefined {
  if (state.phase === 'running') return state.running;
  if (state.phase === 'between') return state.queue[0] ?? missingFollowUp(state);
  return undefined;
}

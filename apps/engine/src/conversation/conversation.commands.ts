import type { TurnCommand } from '../turn/turn.commands';
import type { TurnSpec } from '../turn/turn.state';

/**
 * What the engine asks of a conversation. Ids and the engine's own id come in
 * the command: the decider mints nothing and reads no clock.
 */
export type ConversationCommand =
  /** A new turn: it starts when no turn runs or waits; with `whenBusy: "queue"` it is queued behind them. */
  | ({ type: 'StartTurn'; turnId: string; tenantId: string; engineId: string; whenBusy: 'reject' | 'queue' } & TurnSpec)
  /** Cancels a turn still queued; a running turn is cancelled by its own runner (`ForTurn`). */
  | { type: 'CancelQueuedTurn'; turnId: string; tenantId: string; reason: string }
  /** The running turn ended: its follow-up is queued if it moved steers, then the oldest queued turn starts. */
  | { type: 'AdvanceConversation'; engineId: string }
  /**
   * An engine's claim on `orphan` outlived the engine (docs/design.md §10): a
   * turn it ran is resumed here; when it had ended and the turn after it never
   * started, that one starts here. The resume's fields are `ResumeTurn`'s.
   */
  | { type: 'AdoptConversation'; orphan: { turnId: string; engineId: string }; engineId: string; limit: number; rerunnable: readonly string[]; nextTurnId: string }
  /** A command of one turn (a steer, a model answer, a tool result, a cancel …), decided by the turn's decider. */
  | { type: 'ForTurn'; turnId: string; command: Exclude<TurnCommand, { type: 'StartTurn' | 'QueueTurn' | 'ResumeTurn' }> };

import type { TurnLimits } from './limits';
import type { ModelSpec } from './models';
import type { ChatMessage } from './transcript';
import type { Boundary, DropReason } from './events';
import type { ConversationCursor, SteerStatus, TurnStatus } from './commands';

/** Read models answered by the persistence service (docs/design.md §5). */
export interface SteerView {
  id: string;
  turnId: string;
  text: string;
  position: number;
  status: SteerStatus;
  reason?: DropReason;
  step?: number;
  boundary?: Boundary;
  requestStep?: number;
  /** A steer moved to the next turn: that turn. */
  nextTurnId?: string;
  queuedAt: string;
  settledAt?: string;
}

/** A tool call waiting for a person's decision (docs/design.md §9). */
export interface PendingApproval {
  toolCallId: string;
  step: number;
  name: string;
  args: Record<string, unknown>;
  requestedAt: string;
}

export interface TurnView {
  id: string;
  conversationId: string;
  status: TurnStatus;
  steps: number;
  prompt: string;
  model: ModelSpec;
  limits: TurnLimits;
  text?: string;
  error?: { code: string; message: string };
  cancelReason?: string;
  /** How many times the turn moved to another engine. */
  resumes: number;
  steers: { queued: number; delivered: number; dropped: number };
  pendingApprovals: PendingApproval[];
  startedAt: string;
  endedAt?: string;
}

export interface ConversationView {
  id: string;
  createdAt: string;
  turns: Omit<TurnView, 'steers' | 'conversationId' | 'pendingApprovals'>[] | TurnView[];
  messages: ChatMessage[];
  steers: SteerView[];
}

/**
 * One answer of `qry.conversation`: a conversation's sections in order (turns,
 * then messages, then steers), as much of them as fits below the connection's
 * `max_payload`. `next` is where the following page starts; absent, the read
 * is complete. Sections before the query's cursor, and after `next`, are empty.
 */
export interface ConversationPage extends ConversationView {
  next?: ConversationCursor;
}

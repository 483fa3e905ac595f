import type { Boundary, ChatMessage, DropReason, ModelSpec, PendingApproval, SteerStatus, ToolCall, TurnLimits, TurnStatus } from '@steerline/contracts';

/**
 * The read models as plain data: what the pure evolve functions take and
 * return. Timestamps are ISO strings, as in the events they come from.
 */
export interface ConversationRow {
  id: string;
  tenantId: string;
  createdAt: string;
  /** Also the ordinal the next message gets. */
  messageCount: number;
}

export interface TurnRow {
  id: string;
  conversationId: string;
  tenantId: string;
  status: TurnStatus;
  steps: number;
  prompt: string;
  model: ModelSpec;
  limits: TurnLimits;
  text: string | null;
  error: { code: string; message: string } | null;
  cancelReason: string | null;
  /** How many times the turn moved to another engine (TurnResumed). */
  resumes: number;
  queued: number;
  delivered: number;
  dropped: number;
  /** Tool calls waiting for a person's decision, in request order. */
  pendingApprovals: PendingApproval[];
  startedAt: string;
  endedAt: string | null;
  /** The turn-scoped `seq` of the last event applied: a redelivered or duplicated event has seq <= this. */
  lastEventSeq: number;
}

export interface SteerRow {
  id: string;
  turnId: string;
  conversationId: string;
  tenantId: string;
  text: string;
  position: number;
  status: SteerStatus;
  reason: DropReason | null;
  step: number | null;
  boundary: Boundary | null;
  requestStep: number | null;
  nextTurnId: string | null;
  queuedAt: string;
  settledAt: string | null;
}

export interface MessageRow {
  conversationId: string;
  ordinal: number;
  role: ChatMessage['role'];
  content: string;
  turnId: string;
  step: number | null;
  steerId: string | null;
  toolCallId: string | null;
  toolCalls: ToolCall[] | null;
}

/** Why a conversation stopped advancing: the event whose turn seq skipped one. */
export interface StallRow {
  conversationId: string;
  tenantId: string;
  turnId: string;
  eventId: string;
  expectedSeq: number;
  foundSeq: number;
  eventAt: string;
}

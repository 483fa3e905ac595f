import type { AgentFields, ApprovalAnswer, ApprovalDecider, ApprovalPolicy, Boundary, DropReason, ModelSpec, OnTurnEnd, Receipt, TurnLimits, TurnStatus } from '@steerline/contracts';

export interface SteerRecord {
  steerId: string;
  text: string;
  position: number;
  status: Receipt['status'];
  step?: number;
  boundary?: Boundary;
  requestStep?: number;
  reason?: DropReason;
  onTurnEnd: OnTurnEnd;
  expiresAt?: string;
  nextTurnId?: string;
}

/** A tool call that asked for approval, and what became of the request. */
export interface ApprovalRecord {
  toolCallId: string;
  step: number;
  name: string;
  args: Record<string, unknown>;
  status: 'pending' | 'approved' | 'denied';
  /** When the request was logged: a timeout counts from it, also on the engine that resumes the turn. */
  requestedAt: string;
  reason?: string;
  by?: ApprovalDecider;
}

/** Everything the decider needs to know about one turn; rebuilt from its events by `evolve`. */
export interface TurnState {
  status: 'new' | TurnStatus;
  /** A queued turn's prompt, until it starts. */
  queuedPrompt?: string;
  turnId: string;
  tenantId: string;
  conversationId: string;
  model?: ModelSpec;
  limits?: TurnLimits;
  approvalPolicy?: ApprovalPolicy;
  /** Instructions, settings, tool allow-list and agent version (docs/design.md §6.1, "A turn's agent"), as TurnQueued/TurnStarted recorded them. */
  agentFields?: AgentFields;
  /** Every approval request of the turn, by tool call id (the latest request wins a reused id). */
  approvals: ReadonlyMap<string, ApprovalRecord>;
  /** `seq` of the turn's last event. */
  seq: number;
  /** The step of the latest model request (0 before the first). */
  step: number;
  awaiting: 'nothing' | 'model' | 'tools';
  /** Whether the model has answered at least once: nothing is delivered before (I5). */
  responded: boolean;
  lastText: string;
  /** Tool calls of the current step, and those finished, in finish order. */
  toolCalls: string[];
  finished: string[];
  /** The current step's calls whose ToolCallStarted is in the log, and what each call asked for. */
  started: string[];
  calls: ReadonlyMap<string, { name: string; args: Record<string, unknown> }>;
  /** The engine that runs the turn now (TurnStarted's, or the last TurnResumed's), and how often it moved. */
  engineId: string;
  resumes: number;
  /** Steers delivered at the current boundary whose model request is not in the log yet (a resume finishes it). */
  delivering: string[];
  /** Steers waiting for the next boundary, in position order. */
  queue: string[];
  steers: ReadonlyMap<string, SteerRecord>;
  nextPosition: number;
  continuations: number;
  /** The follow-up turn the turn's `next_turn` steers moved to, once one did. */
  nextTurnId?: string;
}

export function initialState(): TurnState {
  return {
    status: 'new',
    turnId: '',
    tenantId: '',
    conversationId: '',
    seq: 0,
    step: 0,
    awaiting: 'nothing',
    responded: false,
    lastText: '',
    toolCalls: [],
    finished: [],
    started: [],
    calls: new Map(),
    engineId: '',
    resumes: 0,
    delivering: [],
    queue: [],
    steers: new Map(),
    approvals: new Map(),
    nextPosition: 1,
    continuations: 0,
  };
}

/** The receipt of a steer as the state knows it; undefined for an unknown id. */
export function receiptOf(state: TurnState, steerId: string): Receipt | undefined {
  const s = state.steers.get(steerId);
  if (!s) return undefined;
  const receipt: Receipt = { steerId, turnId: state.turnId, status: s.status, position: s.position, text: s.text };
  if (s.step !== undefined) receipt.step = s.step;
  if (s.boundary !== undefined) receipt.boundary = s.boundary;
  if (s.requestStep !== undefined) receipt.requestStep = s.requestStep;
  if (s.reason !== undefined) receipt.reason = s.reason;
  if (s.nextTurnId !== undefined) receipt.nextTurnId = s.nextTurnId;
  return receipt;
}

/** The answer to a decision on `toolCallId`, once one is recorded. */
export function approvalAnswerOf(state: TurnState, toolCallId: string): ApprovalAnswer | undefined {
  const a = state.approvals.get(toolCallId);
  if (!a || a.status === 'pending') return undefined;
  return { toolCallId, decision: a.status, ...(a.reason !== undefined && { reason: a.reason }), by: a.by! };
}

/** Calls of the current step still waiting for a decision, in request order. */
export function pendingApprovals(state: TurnState): ApprovalRecord[] {
  return [...state.approvals.values()].filter((a) => a.status === 'pending');
}

import type { ApprovalAnswer, ApprovalDecider, ApprovalPolicy, Boundary, DropReason, ModelSettings, ModelSpec, OnTurnEnd, Receipt, TurnLimits, AgentVersion } from '@steerline/contracts';
import { GrowingMap } from './growing-map';

/**
 * What a turn runs with, as `StartTurn`, `TurnQueued` and `TurnStarted` carry it.
 * One object, so that a new field of a turn's spec is added here and in `specOf`.
 * The agent fields (`instructions`, `settings`, `tools`, `agent`: docs/design.md
 * §6.1, "A turn's agent") are as the events record them; `runner` and
 * `leaseDigest` mark a turn whose loop runs in another process (§2, "External turns").
 */
export interface TurnSpec {
  prompt: string;
  model: ModelSpec;
  limits: TurnLimits;
  approvals?: ApprovalPolicy;
  instructions?: string;
  settings?: ModelSettings;
  /** Absent: every tool of the tenant. */
  tools?: string[];
  agent?: AgentVersion;
  runner?: 'external';
  leaseDigest?: string;
}

/** The spec fields of a command or an event's data; absent optional fields stay absent (they are logged as JSON), and so do empty settings. */
export function specOf(from: TurnSpec): TurnSpec {
  const { prompt, model, limits, approvals, instructions, settings, tools, agent, runner, leaseDigest } = from;
  return {
    prompt,
    model,
    limits,
    ...(approvals && { approvals }),
    ...(instructions !== undefined && { instructions }),
    ...(settings && Object.keys(settings).length > 0 && { settings }),
    ...(tools !== undefined && { tools }),
    ...(agent && { agent }),
    ...(runner && { runner }),
    ...(leaseDigest && { leaseDigest }),
  };
}

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
  /** An urgent steer (docs/design.md §2, "Urgency"), and the non-interruptible calls it waits for. */
  urgency?: 'interrupt';
  waitingFor?: string[];
}

/** A call's approval: waiting for a decision, or decided (by a person, the policy's timeout, or the turn's end). */
export type Approval = { status: 'pending'; requestedAt: string } | { status: 'approved' | 'denied'; requestedAt: string; by: ApprovalDecider; reason?: string };

/**
 * One tool call the model asked for, and how far it got: `answered` (in a
 * ModelResponded, not started), `started` (its ToolCallStarted is in the log),
 * `finished` (its ToolCallFinished is; `finishedSeq` orders a step's results).
 * `approval` is there when the call asked for one; `requestedAt` is when the
 * request was logged: a timeout counts from it, also on the engine that resumes the turn.
 */
export type ToolCallRecord = {
  toolCallId: string;
  step: number;
  name: string;
  args: Record<string, unknown>;
  approval?: Approval;
} & ({ progress: 'answered' | 'started' } | { progress: 'finished'; finishedSeq: number });

interface TurnIdentity {
  turnId: string;
  tenantId: string;
  conversationId: string;
  /** `seq` of the turn's last event. */
  seq: number;
}

/** How far a started turn got; rebuilt from its events. */
export interface TurnRun {
  /** The engine that runs the turn now (TurnStarted's, or the last TurnResumed's), and how often it moved. */
  engineId: string;
  resumes: number;
  /** The step of the latest model request (0 before the first). */
  step: number;
  /** `interrupted`: an urgent steer cut the step's answer (ModelInterrupted); its deliveries and next request follow. */
  awaiting: 'nothing' | 'model' | 'tools' | 'interrupted';
  /** Whether the model has answered at least once: nothing is delivered before (I5). */
  responded: boolean;
  lastText: string;
  /**
   * Every tool call of the turn by id, the current step's in answer order (a
   * reused id is the latest call's). Older steps' calls are kept for their approvals.
   */
  calls: ReadonlyMap<string, ToolCallRecord>;
  /** Steers delivered at the current boundary whose model request is not in the log yet (a resume finishes it). */
  delivering: string[];
  /** Steers waiting for the next boundary, in position order. */
  queue: string[];
  /** Every steer of the turn by id; grows without a copy per steer event (growing-map.ts). */
  steers: GrowingMap<string, SteerRecord>;
  nextPosition: number;
  continuations: number;
  /** The follow-up turn the turn's `next_turn` steers moved to, once one did. */
  nextTurnId?: string;
}

/** Nothing of the turn is in the log. */
export interface NewTurn extends TurnIdentity {
  status: 'new';
}

/** `TurnQueued`: waiting behind the conversation's running turn; only its start or its cancel can follow. */
export interface QueuedTurn extends TurnIdentity {
  status: 'queued';
  spec: TurnSpec;
  position: number;
  fromTurnId?: string;
}

export interface RunningTurn extends TurnIdentity, TurnRun {
  status: 'running';
  spec: TurnSpec;
}

/** Completed, cancelled or failed; a queued turn cancelled before it started has an empty run. */
export interface EndedTurn extends TurnIdentity, TurnRun {
  status: 'completed' | 'cancelled' | 'failed';
  spec: TurnSpec;
}

/** Everything the decider needs to know about one turn, as a union of its phases; rebuilt from its events by `evolve`. */
export type TurnState = NewTurn | QueuedTurn | RunningTurn | EndedTurn;

export function initialState(): NewTurn {
  return { status: 'new', turnId: '', tenantId: '', conversationId: '', seq: 0 };
}

/** The run of a turn that just started (or of a queued turn cancelled before it could). */
export function emptyRun(engineId = ''): TurnRun {
  return { engineId, resumes: 0, step: 0, awaiting: 'nothing', responded: false, lastText: '', calls: new Map(), delivering: [], queue: [], steers: GrowingMap.empty(), nextPosition: 1, continuations: 0 };
}

/** Whether the turn has a run: it started (and may have ended since). */
export function hasRun(state: TurnState): state is RunningTurn | EndedTurn {
  return state.status !== 'new' && state.status !== 'queued';
}

/** The current step's tool calls, in answer order. */
export function stepCalls(state: TurnRun & { step: number }): ToolCallRecord[] {
  return [...state.calls.values()].filter((c) => c.step === state.step);
}

/** The ids of the current step's finished calls, in the order they finished. */
export function finishedCalls(state: TurnRun): string[] {
  return stepCalls(state)
    .flatMap((c) => (c.progress === 'finished' ? [c] : []))
    .sort((a, b) => a.finishedSeq - b.finishedSeq)
    .map((c) => c.toolCallId);
}

/** Whether every call of the current step has finished: the step's boundary may come. */
export function stepDone(state: TurnRun): boolean {
  return stepCalls(state).every((c) => c.progress === 'finished');
}

/** The receipt of a steer as the state knows it; undefined for an unknown id. */
export function receiptOf(state: TurnState, steerId: string): Receipt | undefined {
  const s = hasRun(state) ? state.steers.get(steerId) : undefined;
  if (!s) return undefined;
  const receipt: Receipt = { steerId, turnId: state.turnId, status: s.status, position: s.position, text: s.text };
  if (s.step !== undefined) receipt.step = s.step;
  if (s.boundary !== undefined) receipt.boundary = s.boundary;
  if (s.requestStep !== undefined) receipt.requestStep = s.requestStep;
  if (s.reason !== undefined) receipt.reason = s.reason;
  if (s.nextTurnId !== undefined) receipt.nextTurnId = s.nextTurnId;
  if (s.urgency) receipt.urgency = s.urgency;
  if (s.waitingFor?.length) receipt.waitingFor = s.waitingFor;
  return receipt;
}

/** Whether an urgent steer waits undelivered: the step was cut (or waits for non-interruptible calls) and the next boundary is `interrupt`. */
export function interruptPending(state: TurnRun): boolean {
  return state.queue.some((id) => state.steers.get(id)?.urgency === 'interrupt');
}

/** The answer to a decision on `toolCallId`, once one is recorded. */
export function approvalAnswerOf(state: TurnState, toolCallId: string): ApprovalAnswer | undefined {
  const a = hasRun(state) ? state.calls.get(toolCallId)?.approval : undefined;
  if (!a || a.status === 'pending') return undefined;
  return { toolCallId, decision: a.status, ...(a.reason !== undefined && { reason: a.reason }), by: a.by };
}

export type PendingCall = ToolCallRecord & { approval: Extract<Approval, { status: 'pending' }> };

/** Calls still waiting for a decision, in request order. */
export function pendingApprovals(state: TurnState): PendingCall[] {
  if (!hasRun(state)) return [];
  return [...state.calls.values()].filter((c): c is PendingCall => c.approval?.status === 'pending');
}

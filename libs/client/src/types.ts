// Type-only: the client has no run-time dependency on the contracts
// (nor on NATS or zod); only `fetch`, which Node 18+ and browsers have.
export type {
  Agent,
  AgentList,
  ApprovalAnswer,
  ApprovalPolicy,
  Boundary,
  ConversationListPage,
  ConversationSummary,
  ConversationView,
  DeliveredSteer,
  DropReason,
  LeaseAnswer,
  LiveMessage,
  ModelEndpointListing,
  ModelSettings,
  ModelsAnswer,
  ModelSpec,
  PendingApproval,
  RunnerApprovalAnswer,
  RunnerCall,
  RunnerCut,
  RunnerLease,
  RunnerLiveMessage,
  RunnerNext,
  RunnerRecordedResult,
  RunnerToolResult,
  SteerlineEvent,
  ToolCall,
  ToolChoice,
  ToolListing,
  ToolsAnswer,
  TurnLimits,
  TurnView,
  Usage,
} from '@steerline/contracts';
import type { ApprovalPolicy, Boundary, DropReason, LiveMessage, ModelSettings, ModelSpec, NextAgentVersionBody, RunnerNext, SteerlineEvent, TurnLimits } from '@steerline/contracts';

/** An agent version's definition (docs/design.md §6.1): a model, and optionally instructions, settings, tools and approvals. */
export type AgentDefinition = Omit<NextAgentVersionBody, 'model'> & { model: StartTurnInput['model'] & {} };

/** How an external turn ended (the `end` answer of the runner protocol). */
export type RunnerEnd = Extract<RunnerNext, { next: 'end' }>;

/** What a running call reports while it works. */
export interface ToolProgressReport {
  /** Done so far, 0..1. */
  progress?: number;
  message?: string;
}

/** A turn this process runs (docs/runner-protocol.md): the model is the runner's own, recorded as given. */
export interface ExternalTurnInput {
  prompt: string;
  /** What the runner calls, for the record (default `{provider: "openai", name: "external"}`); never called by Steerline. */
  model?: { provider: 'openai' | 'anthropic'; name: string };
  limits?: Partial<TurnLimits>;
  /** Calls of these tools (`["*"]`: every tool) wait for a decision; the runner awaits `turn.approval(call)`. */
  approvals?: ApprovalPolicy;
}

interface ReceiptBase {
  steerId: string;
  turnId: string;
  position: number;
  text: string;
  /** An urgent steer (`urgency: "interrupt"`); absent for one that waits for the next boundary. */
  urgency?: 'interrupt';
  /** An urgent steer waits for these running calls: their tools declare themselves non-interruptible. */
  waitingFor?: string[];
}

/** The model's context holds the steer: it went in at `boundary` of `step` (`interrupt`: the step was cut for it), carried by request `requestStep`. */
export interface DeliveredReceipt extends ReceiptBase {
  status: 'delivered';
  step: number;
  boundary: Boundary;
  requestStep: number;
}

/** Accepted, waiting for the next tool boundary. */
export interface QueuedReceipt extends ReceiptBase {
  status: 'queued';
}

/** Will never reach the model; `text` is handed back so it can be resent. */
export interface DroppedReceipt extends ReceiptBase {
  status: 'dropped';
  reason: DropReason;
  /** Reason `moved_to_next_turn`: the turn whose prompt holds this steer's text. */
  nextTurnId?: string;
}

export type Receipt = DeliveredReceipt | QueuedReceipt | DroppedReceipt;

export interface StartTurnInput {
  prompt: string;
  model?: ModelSpec | { provider: 'scripted'; script?: unknown[]; name?: string };
  limits?: Partial<TurnLimits>;
  /** Calls of these tools (`["*"]`: every tool) wait for `approve` or `deny` before they run. */
  approvals?: ApprovalPolicy;
  /** `queue`: while another turn runs, queue this one to start after it (answer `status: "queued"`, `position`). */
  whenBusy?: 'reject' | 'queue';
  /** The system prompt (1–100 000 characters). */
  instructions?: string;
  /** temperature, topP, maxOutputTokens, toolChoice, parallelToolCalls, stop, seed; each optional. */
  settings?: ModelSettings;
  /** The tools the turn may call: names or trailing-`*` patterns (at most 256); absent: every tool of the tenant. */
  tools?: string[];
  /** A stored agent: `"reviewer"` (its latest version) or `"reviewer@3"`. The fields above override the agent's. */
  agent?: string;
}

/** A started turn, or one queued behind the running turn at `position` (1 = next). */
export interface StartedTurn {
  turnId: string;
  status?: 'running' | 'queued';
  position?: number;
}

export interface SteerOptions {
  /** Your own id for the steer: resubmitting it is idempotent (same receipt, no second steer). */
  steerId?: string;
  /**
   * What becomes of the steer if the model ends the turn before reading it:
   * `continue` (default) delivers it and the turn goes on, `drop` drops it
   * `turn_ended`, `next_turn` makes it the prompt of a follow-up turn.
   */
  onTurnEnd?: 'continue' | 'drop' | 'next_turn';
  /** Dropped `expired` if still queued this many ms after it was accepted (1 000–3 600 000). */
  ttlMs?: number;
  /**
   * `interrupt`: stop what the turn is doing — cut the answer being written, cancel the running tool
   * calls, deny a pending approval — and deliver now (boundary `interrupt`). Default `next_boundary`.
   */
  urgency?: 'next_boundary' | 'interrupt';
  /** Wait up to this many seconds (at most 60) for delivery or drop before answering. */
  waitSeconds?: number;
  signal?: AbortSignal;
}

export interface ConversationSteerOptions extends SteerOptions {
  /** Refused with `turn_moved_on` when the conversation's running turn is another one. */
  expectedTurnId?: string;
}

/** One event of a conversation's stream: `id` is its position in the log. */
export interface StreamedEvent {
  id: number;
  type: SteerlineEvent['type'];
  event: SteerlineEvent;
}

/** Live output (docs/design.md §11): a ModelDelta or ToolProgress. Not an event: no log position, never replayed. */
export interface StreamedLive {
  live: true;
  type: LiveMessage['type'];
  message: LiveMessage;
}

export interface EventsOptions {
  /** Also yield live output (ModelDelta, ToolProgress) between the events; default false. */
  live?: boolean;
  /** Start after this log position (an earlier event's `id`); default: from the beginning. */
  after?: number;
  /** Ends the iteration. Breaking out of a `for await` ends it too. */
  signal?: AbortSignal;
  /** Pause before reconnecting after a dropped stream, in ms (default 500, doubling up to 10 s). */
  reconnectDelayMs?: number;
  /**
   * Live messages (`ModelDelta`, `ToolProgress`: no log position, never replayed)
   * are handed here as they arrive; without it they are skipped.
   */
  onLive?: (message: LiveNotice) => void;
  /** Give up after this many reconnects in a row without a new event (default: never). */
  maxReconnects?: number;
  /**
   * A stream that has sent no byte for this long (not even its heartbeat
   * comment, every 15 s by default) is taken for dead and resumed with
   * `Last-Event-ID`, ms; default 45 000, 0: never. A connection a network
   * dropped without a reset (a NAT, a proxy) otherwise waits forever.
   */
  idleTimeoutMs?: number;
}

/** A message of the stream that is not in the log: its SSE `event` name and parsed `data`. */
export interface LiveNotice {
  type: string;
  data: unknown;
}

import type { Boundary, DropReason, ModelSpec, Receipt, TurnLimits, TurnStatus } from '@steerline/contracts';

export interface SteerRecord {
  steerId: string;
  text: string;
  position: number;
  status: Receipt['status'];
  step?: number;
  boundary?: Boundary;
  requestStep?: number;
  reason?: DropReason;
}

/** Everything the decider needs to know about one turn; rebuilt from its events by `evolve`. */
export interface TurnState {
  status: 'new' | TurnStatus;
  turnId: string;
  tenantId: string;
  conversationId: string;
  model?: ModelSpec;
  limits?: TurnLimits;
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
  return receipt;
}

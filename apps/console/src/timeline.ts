/**
 * The console's picture of a conversation's turns, built from its event
 * stream alone: a pure reducer (no DOM, no fetch), so what the page shows for
 * a given stream is decided in one place and unit-tested. Event types this
 * build does not know yet are ignored, never an error.
 */

/** One message of the stream as the page receives it: log events carry their position `id`. */
export interface StreamEvent {
  id: number;
  type: string;
  event: { turnId?: string; data?: unknown };
}

export type SteerStatus = 'queued' | 'delivered' | 'dropped';

export interface SteerEntry {
  steerId: string;
  text: string;
  position: number;
  status: SteerStatus;
  /** Delivered: the step whose boundary carried it. */
  step?: number;
  boundary?: string;
  reason?: string;
  edited?: boolean;
  /** An urgent steer (`urgency: interrupt`), and the non-interruptible calls it waits for. */
  urgent?: boolean;
  waitingFor?: string[];
}

export interface ToolEntry {
  toolCallId: string;
  step: number;
  name: string;
  args: unknown;
  state: 'awaiting_approval' | 'running' | 'ok' | 'failed';
  progress?: number;
  message?: string;
  output?: unknown;
  error?: { code: string; message: string };
  durationMs?: number;
  approval?: 'approved' | 'denied';
  approvalBy?: string;
}

export interface StepEntry {
  step: number;
  /** The answer as it is written (ModelDelta), then as recorded (ModelResponded). */
  text: string;
  answered: boolean;
  toolCallIds: string[];
  /** An urgent steer cut the answer (ModelInterrupted): `text` is what it had written, and no more. */
  interrupted?: boolean;
}

/** What the timeline lists, in the order it happened; each item's details live in the maps. */
export type TimelineItem =
  | { kind: 'step'; step: number }
  | { kind: 'tool'; toolCallId: string }
  | { kind: 'steer'; steerId: string }
  | { kind: 'resumed'; attempt: number; engineId: string; previousEngineId?: string }
  | { kind: 'end' };

export type TurnStatus = 'queued' | 'running' | 'completed' | 'cancelled' | 'failed';

export interface TurnEntry {
  turnId: string;
  status: TurnStatus;
  prompt: string;
  /** Queued follow-up turns: their place in the conversation's queue. */
  queuePosition?: number;
  /** The stored agent the turn runs, and which version (TurnQueued / TurnStarted `agent`). */
  agent?: { name: string; version: number };
  items: TimelineItem[];
  steps: Record<number, StepEntry>;
  tools: Record<string, ToolEntry>;
  steers: Record<string, SteerEntry>;
  text?: string;
  error?: { code: string; message: string };
  cancelReason?: string;
}

export interface Timeline {
  /** The last log position applied: what a reconnect resumes after. */
  lastEventId: number;
  turns: TurnEntry[];
}

export const emptyTimeline = (): Timeline => ({ lastEventId: 0, turns: [] });

/** The turn that is running now, if any (at most one per conversation). */
export function runningTurn(t: Timeline): TurnEntry | undefined {
  return t.turns.find((turn) => turn.status === 'running');
}

type Data = Record<string, any>;

/** Applies one log event. An event at or before `lastEventId` was applied already and changes nothing. */
export function applyEvent(t: Timeline, e: StreamEvent): Timeline {
  if (e.id <= t.lastEventId) return t;
  const next = { ...t, lastEventId: e.id };
  const turnId = e.event.turnId;
  if (!turnId) return next;
  const d = (e.event.data ?? {}) as Data;
  if (e.type === 'TurnQueued' || e.type === 'TurnStarted') {
    const existing = t.turns.find((x) => x.turnId === turnId);
    const status: TurnStatus = e.type === 'TurnQueued' ? 'queued' : 'running';
    const agent = agentOf(d.agent);
    if (existing) return withTurn(next, turnId, (turn) => ({ ...turn, status, prompt: d.prompt ?? turn.prompt, queuePosition: undefined, agent: agent ?? turn.agent }));
    const turn: TurnEntry = { turnId, status, prompt: String(d.prompt ?? ''), queuePosition: d.position, agent, items: [], steps: {}, tools: {}, steers: {} };
    return { ...next, turns: [...t.turns, turn] };
  }
  return withTurn(next, turnId, (turn) => applyToTurn(turn, e.type, d));
}

function applyToTurn(turn: TurnEntry, type: string, d: Data): TurnEntry {
  switch (type) {
    case 'ModelRequested':
      if (turn.steps[d.step]) return turn;
      return add({ ...turn, steps: { ...turn.steps, [d.step]: { step: d.step, text: '', answered: false, toolCallIds: [] } } }, { kind: 'step', step: d.step });
    case 'ModelResponded':
      return step(turn, d.step, (s) => ({ ...s, text: d.text, answered: true, toolCallIds: (d.toolCalls ?? []).map((c: Data) => c.id) }));
    case 'ModelInterrupted':
      // What was cut is the record's partial text, not whatever deltas arrived.
      return step(turn, d.step, (s) => ({ ...s, text: String(d.partialText ?? ''), answered: true, interrupted: true }));
    case 'ToolApprovalRequested':
      return upsertTool(turn, d, { state: 'awaiting_approval' });
    case 'ToolApprovalDecided':
      return tool(turn, d.toolCallId, (c) => ({ ...c, approval: d.decision, approvalBy: d.by, state: d.decision === 'approved' ? c.state : 'failed' }));
    case 'ToolCallStarted':
      return upsertTool(turn, d, { state: 'running' });
    case 'ToolCallFinished':
      return upsertTool(turn, d, { state: d.ok ? 'ok' : 'failed', output: d.output, error: d.error, durationMs: d.durationMs, progress: d.ok ? 1 : undefined });
    case 'SteerQueued':
      return add(
        { ...turn, steers: { ...turn.steers, [d.steerId]: { steerId: d.steerId, text: d.text, position: d.position, status: 'queued', ...(d.urgency === 'interrupt' && { urgent: true }), ...(d.waitingFor && { waitingFor: d.waitingFor }) } } },
        { kind: 'steer', steerId: d.steerId },
      );
    case 'SteerEdited':
      return steer(turn, d.steerId, (s) => ({ ...s, text: d.text, edited: true }));
    case 'SteeringDelivered':
      return steer(turn, d.steerId, (s) => ({ ...s, status: 'delivered', step: d.step, boundary: d.boundary }));
    case 'SteerDropped':
      return steer(turn, d.steerId, (s) => ({ ...s, status: 'dropped', reason: d.reason, text: d.text ?? s.text }));
    case 'TurnResumed':
      return add(turn, { kind: 'resumed', attempt: d.attempt, engineId: d.engineId, previousEngineId: d.previousEngineId });
    case 'TurnCompleted':
      return add({ ...turn, status: 'completed', text: d.text }, { kind: 'end' });
    case 'TurnCancelled':
      return add({ ...turn, status: 'cancelled', cancelReason: d.reason }, { kind: 'end' });
    case 'TurnFailed':
      return add({ ...turn, status: 'failed', error: d.error }, { kind: 'end' });
    default:
      return turn;
  }
}

/**
 * Applies a live message (not in the log, never replayed): answer text as it
 * is written and tool progress. A delta for a step already answered is late
 * and ignored: the recorded text is the whole text.
 */
export function applyLive(t: Timeline, message: { type: string; data: unknown }): Timeline {
  const d = (message.data ?? {}) as Data;
  if (typeof d.turnId !== 'string') return t;
  if (message.type === 'ModelDelta') {
    return withTurn(t, d.turnId, (turn) => {
      const s = turn.steps[d.step];
      if (s?.answered) return turn;
      const base = s ?? { step: d.step, text: '', answered: false, toolCallIds: [] };
      const withStep = { ...turn, steps: { ...turn.steps, [d.step]: { ...base, text: base.text + String(d.text ?? '') } } };
      return s ? withStep : add(withStep, { kind: 'step', step: d.step });
    });
  }
  if (message.type === 'ToolProgress') {
    return withTurn(t, d.turnId, (turn) =>
      tool(turn, d.toolCallId, (c) => (c.state === 'running' ? { ...c, progress: typeof d.progress === 'number' ? d.progress : c.progress, message: d.message ?? c.message } : c)),
    );
  }
  return t;
}

function agentOf(value: unknown): TurnEntry['agent'] {
  const a = value as { name?: unknown; version?: unknown } | undefined;
  return typeof a?.name === 'string' && typeof a.version === 'number' ? { name: a.name, version: a.version } : undefined;
}

function withTurn(t: Timeline, turnId: string, fn: (turn: TurnEntry) => TurnEntry): Timeline {
  const i = t.turns.findIndex((x) => x.turnId === turnId);
  if (i < 0) return t;
  const turns = t.turns.slice();
  turns[i] = fn(turns[i]);
  return { ...t, turns };
}

function add(turn: TurnEntry, item: TimelineItem): TurnEntry {
  return { ...turn, items: [...turn.items, item] };
}

function step(turn: TurnEntry, n: number, fn: (s: StepEntry) => StepEntry): TurnEntry {
  const s = turn.steps[n];
  return s ? { ...turn, steps: { ...turn.steps, [n]: fn(s) } } : turn;
}

function steer(turn: TurnEntry, id: string, fn: (s: SteerEntry) => SteerEntry): TurnEntry {
  const s = turn.steers[id];
  return s ? { ...turn, steers: { ...turn.steers, [id]: fn(s) } } : turn;
}

function tool(turn: TurnEntry, id: string, fn: (c: ToolEntry) => ToolEntry): TurnEntry {
  const c = turn.tools[id];
  return c ? { ...turn, tools: { ...turn.tools, [id]: fn(c) } } : turn;
}

function upsertTool(turn: TurnEntry, d: Data, patch: Partial<ToolEntry>): TurnEntry {
  const existing = turn.tools[d.toolCallId];
  const entry: ToolEntry = { ...(existing ?? { toolCallId: d.toolCallId, step: d.step, name: d.name, args: d.args, state: 'running' }), ...patch };
  const next = { ...turn, tools: { ...turn.tools, [d.toolCallId]: entry } };
  return existing ? next : add(next, { kind: 'tool', toolCallId: d.toolCallId });
}

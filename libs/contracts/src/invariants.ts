import { isTerminalTurnEvent, type SteerlineEvent, type TurnEvent } from './events';

/** Invariants I1–I6 of docs/design.md §2 and I7 of §9, checked on the log alone. */
export type InvariantId = 'I1' | 'I2' | 'I3' | 'I4' | 'I5' | 'I6' | 'I7' | 'positions' | 'single_runner' | 'answers';

export interface Violation {
  invariant: InvariantId;
  conversationId: string;
  turnId?: string;
  steerId?: string;
  streamSeq?: number;
  message: string;
}

export interface LoggedEvent {
  event: SteerlineEvent;
  /** Stream sequence, when read from the stream; reported with violations. */
  streamSeq?: number;
}

export interface AuditOptions {
  /** Turns without a terminal event are violations (use once everything has settled). */
  requireSettled?: boolean;
}

/** Checks every invariant over events in log order; returns every violation found. */
export function checkInvariants(log: Iterable<LoggedEvent>, opts: AuditOptions = {}): Violation[] {
  const checker = new InvariantChecker(opts);
  for (const entry of log) checker.add(entry);
  return checker.finish();
}

/**
 * The invariant checker fed one event at a time, in log order, so a log of any
 * length is checked as it streams past. Its memory grows with the turns still
 * running, plus a small record per ended turn (its id, the steers it settled)
 * so that an event appended after a turn's end is still caught; never with the
 * events themselves.
 */
export class InvariantChecker {
  private readonly violations: Violation[] = [];
  private readonly running = new Map<string, TurnCheck>();
  private readonly ended = new Map<string, EndedTurn>();
  private readonly runningByConversation = new Map<string, string>();
  events = 0;
  steers = 0;

  constructor(private readonly opts: AuditOptions = {}) {}

  get turns(): number {
    return this.running.size + this.ended.size;
  }

  /** Violations found so far (the checks that need a turn's end come with it, or with `finish`). */
  get found(): readonly Violation[] {
    return this.violations;
  }

  add(entry: LoggedEvent): void {
    const e = entry.event;
    this.events += 1;
    if (e.type === 'ConversationCreated') return;
    if (e.type === 'SteerQueued') this.steers += 1;
    if (e.type === 'TurnStarted') {
      const running = this.runningByConversation.get(e.conversationId);
      if (running && running !== e.turnId) {
        this.violations.push({ invariant: 'single_runner', conversationId: e.conversationId, turnId: e.turnId, streamSeq: entry.streamSeq, message: `turn started while turn ${running} still runs` });
      }
      this.runningByConversation.set(e.conversationId, e.turnId);
    }
    const turnEntry = entry as TurnEntry;
    const over = this.ended.get(e.turnId);
    if (over) {
      over.late(turnEntry);
      return;
    }
    let turn = this.running.get(e.turnId);
    if (!turn) this.running.set(e.turnId, (turn = new TurnCheck(turnEntry, this.violations)));
    turn.add(turnEntry);
    if (isTerminalTurnEvent(e)) {
      if (this.runningByConversation.get(e.conversationId) === e.turnId) this.runningByConversation.delete(e.conversationId);
      this.running.delete(e.turnId);
      this.ended.set(e.turnId, turn.end(this.opts));
    }
  }

  /** The checks of turns that never ended; returns every violation found. */
  finish(): Violation[] {
    for (const turn of this.running.values()) turn.end(this.opts);
    this.running.clear();
    return this.violations;
  }
}

type TurnEntry = { event: TurnEvent; streamSeq?: number };
type Report = (invariant: InvariantId, message: string, at?: TurnEntry, steerId?: string) => void;

/** What is kept of a turn once it ended: enough to judge an event appended after its end. */
class EndedTurn {
  private reportedLate = false;
  constructor(
    private readonly v: Report,
    private readonly settled: Set<string>,
    private readonly queued: Set<string>,
    private terminals: number,
  ) {}

  late(entry: TurnEntry): void {
    const e = entry.event;
    if (isTerminalTurnEvent(e) && ++this.terminals === 2) this.v('I1', `${this.terminals} terminal events`, entry);
    else if (!this.reportedLate) this.v('I1', 'events after the terminal event', entry);
    this.reportedLate = true;
    if (e.type === 'SteeringDelivered' || e.type === 'SteerDropped') {
      const id = e.data.steerId;
      if (this.settled.has(id)) this.v('I2', 'steer settled 2 times', entry, id);
      else if (!this.queued.has(id)) this.v('I2', `${e.type} without an earlier SteerQueued`, entry, id);
      this.settled.add(id);
    }
  }
}

/** The checks of one running turn, fed its events in order. */
class TurnCheck {
  private readonly v: Report;
  private nextSeq = 1;
  private terminals = 0;
  private readonly queued = new Map<string, { position: number; settled: number; text: string }>();
  private nextPosition = 1;
  private lastDeliveredPosition = 0;
  private firstResponseSeen = false;
  private lastResponse: LastResponse | undefined;
  /** Steps whose model outcome (ModelResponded or ModelInterrupted) is in the log: one each. */
  private readonly answered = new Set<number>();
  private readonly finished = new Map<number, Set<string>>();
  private pendingDeliveries: { steerId: string; requestStep: number; entry: TurnEntry }[] = [];
  private last: TurnEntry;
  private queuedFirst = false;
  // I7: per tool call (by step and id), its approval request and decisions.
  private readonly approvals = new Map<string, { decisions: number; approved: boolean; started: boolean }>();

  constructor(first: TurnEntry, violations: Violation[]) {
    const { conversationId, turnId } = first.event;
    this.v = (invariant, message, at, steerId) => violations.push({ invariant, conversationId, turnId, steerId, streamSeq: at?.streamSeq, message });
    this.last = first;
    // I1: TurnStarted first, or TurnQueued (a queued turn, docs/design.md §8) then TurnStarted or TurnCancelled.
    if (first.event.type !== 'TurnStarted' && first.event.type !== 'TurnQueued') this.v('I1', `first event is ${first.event.type}, not TurnStarted`, first);
  }

  add(entry: TurnEntry): void {
    const e = entry.event;
    this.last = entry;
    // I1: gapless seq from 1.
    if (e.seq !== this.nextSeq) this.v('I1', `seq ${e.seq} where ${this.nextSeq} was expected`, entry);
    this.nextSeq += 1;
    if (isTerminalTurnEvent(e)) this.terminals += 1;
    if (e.seq === 2 && this.queuedFirst && e.type !== 'TurnStarted' && e.type !== 'TurnCancelled') {
      this.v('I1', `a queued turn went on with ${e.type}, not TurnStarted or TurnCancelled`, entry);
    }
    if (e.type === 'TurnQueued' && e.seq !== 1) this.v('I1', 'TurnQueued after the turn’s first event', entry);
    if (e.seq === 1) this.queuedFirst = e.type === 'TurnQueued';
    switch (e.type) {
      case 'ToolApprovalRequested':
        if (this.approvals.has(callKey(e.data))) this.v('I7', `tool call ${e.data.toolCallId} asked for approval twice`, entry);
        this.approvals.set(callKey(e.data), { decisions: 0, approved: false, started: false });
        break;
      case 'ToolApprovalDecided': {
        const a = this.approvals.get(callKey(e.data));
        if (!a) this.v('I7', `decision on tool call ${e.data.toolCallId} without an earlier ToolApprovalRequested`, entry);
        else if (++a.decisions > 1) this.v('I7', `tool call ${e.data.toolCallId} decided ${a.decisions} times`, entry);
        else a.approved = e.data.decision === 'approved';
        break;
      }
      case 'ToolCallStarted': {
        const a = this.approvals.get(callKey(e.data));
        if (a && !a.approved) this.v('I7', `tool call ${e.data.toolCallId} started without an approved decision`, entry);
        if (a && a.started) this.v('I7', `tool call ${e.data.toolCallId} started twice`, entry);
        if (a) a.started = true;
        break;
      }
      case 'SteerQueued':
        if (this.queued.has(e.data.steerId)) this.v('I2', 'steer queued twice', entry, e.data.steerId);
        if (e.data.position !== this.nextPosition) this.v('positions', `position ${e.data.position} where ${this.nextPosition} was expected`, entry, e.data.steerId);
        this.nextPosition = e.data.position + 1;
        this.queued.set(e.data.steerId, { position: e.data.position, settled: 0, text: e.data.text });
        break;
      case 'SteerEdited': {
        // An edit only ever changes a queued steer, and what settles it carries the last text.
        const q = this.queued.get(e.data.steerId);
        if (!q || q.settled > 0) this.v('I2', 'edit of a steer that is not queued', entry, e.data.steerId);
        else if (q.text !== e.data.previousText) this.v('I2', 'edit whose previousText is not the steer’s text', entry, e.data.steerId);
        else q.text = e.data.text;
        break;
      }
      case 'SteeringDelivered':
      case 'SteerDropped': {
        const q = this.queued.get(e.data.steerId);
        if (!q) this.v('I2', `${e.type} without an earlier SteerQueued`, entry, e.data.steerId);
        else if (++q.settled > 1) this.v('I2', `steer settled ${q.settled} times`, entry, e.data.steerId);
        else if (q.text !== e.data.text) this.v('I2', `${e.type} carries a text that is not the steer’s last one`, entry, e.data.steerId);
        if (e.type === 'SteerDropped') break;
        if (!this.firstResponseSeen) this.v('I5', 'delivery before the first ModelResponded (or ModelInterrupted)', entry, e.data.steerId);
        if (e.data.position <= this.lastDeliveredPosition) this.v('I3', `delivered position ${e.data.position} after ${this.lastDeliveredPosition}`, entry, e.data.steerId);
        this.lastDeliveredPosition = Math.max(this.lastDeliveredPosition, e.data.position);
        checkBoundary(e, entry, this.lastResponse, this.finished, this.v);
        this.pendingDeliveries.push({ steerId: e.data.steerId, requestStep: e.data.requestStep, entry });
        break;
      }
      case 'ModelResponded':
      case 'ModelInterrupted':
        // An interrupted answer is never also recorded as an answer, nor an answer twice.
        if (this.answered.has(e.data.step)) this.v('answers', `step ${e.data.step} has a second model outcome (${e.type})`, entry);
        this.answered.add(e.data.step);
        this.firstResponseSeen = true;
        this.lastResponse = e.type === 'ModelResponded' ? { step: e.data.step, toolCalls: e.data.toolCalls.map((c) => c.id), interrupted: false } : { step: e.data.step, toolCalls: [], interrupted: true };
        // Tool results of earlier steps can no longer matter to a boundary.
        for (const s of this.finished.keys()) if (s < e.data.step) this.finished.delete(s);
        break;
      case 'ToolCallFinished': {
        const set = this.finished.get(e.data.step) ?? new Set<string>();
        set.add(e.data.toolCallId);
        this.finished.set(e.data.step, set);
        break;
      }
      case 'ModelRequested': {
        const expected = this.pendingDeliveries.map((d) => d.steerId);
        for (const d of this.pendingDeliveries) {
          if (d.requestStep !== e.data.step) this.v('I4', `delivery names request step ${d.requestStep} but precedes request ${e.data.step}`, d.entry, d.steerId);
        }
        if (expected.join() !== e.data.steerIds.join()) {
          this.v('I6', `request ${e.data.step} carries [${e.data.steerIds.join(', ')}] but [${expected.join(', ')}] were delivered for it`, entry);
        }
        this.pendingDeliveries = [];
        break;
      }
      default:
        break;
    }
  }

  /** The checks that need the whole turn; returns what is kept of it. */
  end(opts: AuditOptions): EndedTurn {
    const last = this.last;
    if (this.terminals === 0 && opts.requireSettled) this.v('I1', 'turn has no terminal event', last);
    for (const d of this.pendingDeliveries) this.v('I4', `delivered for request ${d.requestStep}, which was never sent`, d.entry, d.steerId);
    if (this.terminals > 0 || opts.requireSettled) {
      for (const [steerId, q] of this.queued) if (q.settled === 0) this.v('I2', 'accepted steer never settled', last, steerId);
      for (const [key, a] of this.approvals) if (a.decisions === 0) this.v('I7', `approval request ${key} never decided`, last);
    }
    const settled = new Set<string>();
    for (const [steerId, q] of this.queued) if (q.settled > 0) settled.add(steerId);
    return new EndedTurn(this.v, settled, new Set(this.queued.keys()), this.terminals);
  }
}

type LastResponse = { step: number; toolCalls: string[]; interrupted: boolean };

const callKey = (d: { step: number; toolCallId: string }) => `${d.step}/${d.toolCallId}`;

function checkBoundary(
  e: Extract<TurnEvent, { type: 'SteeringDelivered' }>,
  entry: TurnEntry,
  lastResponse: LastResponse | undefined,
  finished: Map<number, Set<string>>,
  v: Report,
): void {
  const { step, boundary, steerId } = e.data;
  if (!lastResponse || lastResponse.step !== step) {
    v('I4', `delivered at step ${step} but the last model answer is step ${lastResponse?.step ?? 'none'}`, entry, steerId);
    return;
  }
  if (e.data.requestStep !== step + 1) v('I4', `delivered at step ${step} for request ${e.data.requestStep}`, entry, steerId);
  if (lastResponse.interrupted) {
    if (boundary !== 'interrupt') v('I4', `${boundary} delivery after an interrupted answer`, entry, steerId);
  } else if (boundary === 'tool_results' || boundary === 'interrupt') {
    // An interrupt of a tool step comes once every call has its (possibly `interrupted`) result.
    const done = finished.get(step) ?? new Set<string>();
    const missing = lastResponse.toolCalls.filter((id) => !done.has(id));
    if (lastResponse.toolCalls.length === 0) v('I4', `${boundary} delivery after an answer without tool calls`, entry, steerId);
    if (missing.length) v('I4', `${boundary} delivery before tool calls ${missing.join(', ')} finished`, entry, steerId);
  } else if (lastResponse.toolCalls.length > 0) {
    v('I4', 'turn_end delivery after an answer with tool calls', entry, steerId);
  }
}

import { isTerminalTurnEvent, type SteerlineEvent, type TurnEvent } from './events';

/** Invariants I1–I6 of DESIGN §2 and I7 of §8.2, checked on the log alone. */
export type InvariantId = 'I1' | 'I2' | 'I3' | 'I4' | 'I5' | 'I6' | 'I7' | 'positions' | 'single_runner';

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
export function checkInvariants(log: LoggedEvent[], opts: AuditOptions = {}): Violation[] {
  const violations: Violation[] = [];
  const turns = new Map<string, LoggedEvent[]>();
  const runningByConversation = new Map<string, string>();
  for (const entry of log) {
    const e = entry.event;
    if (e.type === 'ConversationCreated') continue;
    if (e.type === 'TurnStarted') {
      const running = runningByConversation.get(e.conversationId);
      if (running && running !== e.turnId) {
        violations.push({ invariant: 'single_runner', conversationId: e.conversationId, turnId: e.turnId, streamSeq: entry.streamSeq, message: `turn started while turn ${running} still runs` });
      }
      runningByConversation.set(e.conversationId, e.turnId);
    }
    if (isTerminalTurnEvent(e) && runningByConversation.get(e.conversationId) === e.turnId) runningByConversation.delete(e.conversationId);
    const list = turns.get(e.turnId) ?? [];
    list.push(entry);
    turns.set(e.turnId, list);
  }
  for (const entries of turns.values()) violations.push(...checkTurn(entries as { event: TurnEvent; streamSeq?: number }[], opts));
  return violations;
}

function checkTurn(entries: { event: TurnEvent; streamSeq?: number }[], opts: AuditOptions): Violation[] {
  const out: Violation[] = [];
  const first = entries[0].event;
  const v = (invariant: InvariantId, message: string, at?: { event: TurnEvent; streamSeq?: number }, steerId?: string) =>
    out.push({ invariant, conversationId: first.conversationId, turnId: first.turnId, steerId, streamSeq: at?.streamSeq, message });

  // I1: gapless seq from 1, TurnStarted first, exactly one terminal event, last.
  entries.forEach((entry, i) => {
    if (entry.event.seq !== i + 1) v('I1', `seq ${entry.event.seq} where ${i + 1} was expected`, entry);
  });
  // A queued turn (DESIGN §8.3) begins with TurnQueued, then starts or is cancelled.
  const opening = first.type === 'TurnQueued' ? entries[1]?.event : first;
  if (first.type !== 'TurnStarted' && first.type !== 'TurnQueued') v('I1', `first event is ${first.type}, not TurnStarted`, entries[0]);
  if (first.type === 'TurnQueued' && opening && opening.type !== 'TurnStarted' && opening.type !== 'TurnCancelled') {
    v('I1', `a queued turn went on with ${opening.type}, not TurnStarted or TurnCancelled`, entries[1]);
  }
  if (entries.slice(1).some((x) => x.event.type === 'TurnQueued')) v('I1', 'TurnQueued after the turn’s first event', entries[1]);
  const terminals = entries.filter((x) => isTerminalTurnEvent(x.event));
  if (terminals.length > 1) v('I1', `${terminals.length} terminal events`, terminals[1]);
  if (terminals.length >= 1 && !isTerminalTurnEvent(entries[entries.length - 1].event)) {
    v('I1', 'events after the terminal event', entries[entries.length - 1]);
  }
  if (terminals.length === 0 && opts.requireSettled) v('I1', 'turn has no terminal event', entries[entries.length - 1]);

  const queued = new Map<string, { position: number; settled: number; text: string }>();
  let nextPosition = 1;
  let lastDeliveredPosition = 0;
  let firstResponseSeen = false;
  let lastResponse: { step: number; toolCalls: string[] } | undefined;
  const finished = new Map<number, Set<string>>();
  let pendingDeliveries: { steerId: string; requestStep: number; boundary: string; step: number; entry: (typeof entries)[number] }[] = [];

  // I7: per tool call (by step and id), its approval request and decisions.
  const approvals = new Map<string, { decisions: number; approved: boolean; started: boolean }>();
  const callKey = (d: { step: number; toolCallId: string }) => `${d.step}/${d.toolCallId}`;

  for (const entry of entries) {
    const e = entry.event;
    switch (e.type) {
      case 'ToolApprovalRequested':
        if (approvals.has(callKey(e.data))) v('I7', `tool call ${e.data.toolCallId} asked for approval twice`, entry);
        approvals.set(callKey(e.data), { decisions: 0, approved: false, started: false });
        break;
      case 'ToolApprovalDecided': {
        const a = approvals.get(callKey(e.data));
        if (!a) v('I7', `decision on tool call ${e.data.toolCallId} without an earlier ToolApprovalRequested`, entry);
        else if (++a.decisions > 1) v('I7', `tool call ${e.data.toolCallId} decided ${a.decisions} times`, entry);
        else a.approved = e.data.decision === 'approved';
        break;
      }
      case 'ToolCallStarted': {
        const a = approvals.get(callKey(e.data));
        if (a && !a.approved) v('I7', `tool call ${e.data.toolCallId} started without an approved decision`, entry);
        if (a && a.started) v('I7', `tool call ${e.data.toolCallId} started twice`, entry);
        if (a) a.started = true;
        break;
      }
      case 'SteerQueued':
        if (queued.has(e.data.steerId)) v('I2', 'steer queued twice', entry, e.data.steerId);
        if (e.data.position !== nextPosition) v('positions', `position ${e.data.position} where ${nextPosition} was expected`, entry, e.data.steerId);
        nextPosition = e.data.position + 1;
        queued.set(e.data.steerId, { position: e.data.position, settled: 0, text: e.data.text });
        break;
      case 'SteerEdited': {
        // An edit only ever changes a queued steer, and what settles it carries the last text.
        const q = queued.get(e.data.steerId);
        if (!q || q.settled > 0) v('I2', 'edit of a steer that is not queued', entry, e.data.steerId);
        else if (q.text !== e.data.previousText) v('I2', 'edit whose previousText is not the steer’s text', entry, e.data.steerId);
        else q.text = e.data.text;
        break;
      }
      case 'SteeringDelivered':
      case 'SteerDropped': {
        const q = queued.get(e.data.steerId);
        if (!q) v('I2', `${e.type} without an earlier SteerQueued`, entry, e.data.steerId);
        else if (++q.settled > 1) v('I2', `steer settled ${q.settled} times`, entry, e.data.steerId);
        else if (q.text !== e.data.text) v('I2', `${e.type} carries a text that is not the steer’s last one`, entry, e.data.steerId);
        if (e.type === 'SteerDropped') break;
        if (!firstResponseSeen) v('I5', 'delivery before the first ModelResponded', entry, e.data.steerId);
        if (e.data.position <= lastDeliveredPosition) v('I3', `delivered position ${e.data.position} after ${lastDeliveredPosition}`, entry, e.data.steerId);
        lastDeliveredPosition = Math.max(lastDeliveredPosition, e.data.position);
        checkBoundary(e, entry, lastResponse, finished, v);
        pendingDeliveries.push({ steerId: e.data.steerId, requestStep: e.data.requestStep, boundary: e.data.boundary, step: e.data.step, entry });
        break;
      }
      case 'ModelResponded':
        firstResponseSeen = true;
        lastResponse = { step: e.data.step, toolCalls: e.data.toolCalls.map((c) => c.id) };
        break;
      case 'ToolCallFinished': {
        const set = finished.get(e.data.step) ?? new Set<string>();
        set.add(e.data.toolCallId);
        finished.set(e.data.step, set);
        break;
      }
      case 'ModelRequested': {
        const expected = pendingDeliveries.map((d) => d.steerId);
        for (const d of pendingDeliveries) {
          if (d.requestStep !== e.data.step) v('I4', `delivery names request step ${d.requestStep} but precedes request ${e.data.step}`, d.entry, d.steerId);
        }
        if (expected.join() !== e.data.steerIds.join()) {
          v('I6', `request ${e.data.step} carries [${e.data.steerIds.join(', ')}] but [${expected.join(', ')}] were delivered for it`, entry);
        }
        pendingDeliveries = [];
        break;
      }
      default:
        break;
    }
  }
  for (const d of pendingDeliveries) v('I4', `delivered for request ${d.requestStep}, which was never sent`, d.entry, d.steerId);
  const ended = terminals.length > 0;
  if (ended || opts.requireSettled) {
    for (const [steerId, q] of queued) if (q.settled === 0) v('I2', 'accepted steer never settled', entries[entries.length - 1], steerId);
    for (const [key, a] of approvals) if (a.decisions === 0) v('I7', `approval request ${key} never decided`, entries[entries.length - 1]);
  }
  return out;
}

function checkBoundary(
  e: Extract<TurnEvent, { type: 'SteeringDelivered' }>,
  entry: { event: TurnEvent; streamSeq?: number },
  lastResponse: { step: number; toolCalls: string[] } | undefined,
  finished: Map<number, Set<string>>,
  v: (i: InvariantId, m: string, at?: { event: TurnEvent; streamSeq?: number }, steerId?: string) => void,
): void {
  const { step, boundary, steerId } = e.data;
  if (!lastResponse || lastResponse.step !== step) {
    v('I4', `delivered at step ${step} but the last model answer is step ${lastResponse?.step ?? 'none'}`, entry, steerId);
    return;
  }
  if (e.data.requestStep !== step + 1) v('I4', `delivered at step ${step} for request ${e.data.requestStep}`, entry, steerId);
  if (boundary === 'tool_results') {
    const done = finished.get(step) ?? new Set<string>();
    const missing = lastResponse.toolCalls.filter((id) => !done.has(id));
    if (lastResponse.toolCalls.length === 0) v('I4', 'tool_results delivery after an answer without tool calls', entry, steerId);
    if (missing.length) v('I4', `tool_results delivery before tool calls ${missing.join(', ')} finished`, entry, steerId);
  } else if (lastResponse.toolCalls.length > 0) {
    v('I4', 'turn_end delivery after an answer with tool calls', entry, steerId);
  }
}

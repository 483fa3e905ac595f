import type { SteerlineEvent } from '@steerline/contracts';
import { appendMessages, countSteer, evolveConversation, evolveSteer, evolveTurn, isSteerEvent } from './evolve';
import type { ConversationRow, MessageRow, StallRow, SteerRow, TurnRow } from './rows';

/**
 * The rows one batch touches, held in memory while its events are applied and
 * then written back with a few multi-row statements: a batch costs the same
 * handful of round trips whether it holds one event or five hundred.
 */
export interface WorkingSet {
  conversations: Map<string, ConversationRow>;
  turns: Map<string, TurnRow>;
  steers: Map<string, SteerRow>;
  /** New transcript messages, in ordinal order per conversation. */
  messages: MessageRow[];
  /** Conversations that stopped advancing, by id: their events are parked, not applied. */
  stalled: Map<string, StallRow>;
  changed: { conversations: Set<string>; turns: Set<string>; steers: Set<string>; stalled: Set<string> };
  /** Turns whose row was loaded (it is stored): a change to one is an update of the columns that change. */
  storedTurns: Set<string>;
}

export function workingSet(
  rows: { conversations?: ConversationRow[]; turns?: TurnRow[]; steers?: SteerRow[]; stalled?: StallRow[] } = {},
): WorkingSet {
  return {
    conversations: new Map((rows.conversations ?? []).map((r) => [r.id, r])),
    turns: new Map((rows.turns ?? []).map((r) => [r.id, r])),
    steers: new Map((rows.steers ?? []).map((r) => [r.id, r])),
    messages: [],
    stalled: new Map((rows.stalled ?? []).map((r) => [r.conversationId, r])),
    changed: { conversations: new Set(), turns: new Set(), steers: new Set(), stalled: new Set() },
    storedTurns: new Set((rows.turns ?? []).map((r) => r.id)),
  };
}

/** The ids of every row an event may read or change, to load before applying it. */
export function rowKeys(events: SteerlineEvent[]): { conversationIds: string[]; turnIds: string[]; steerIds: string[] } {
  const conversationIds = new Set<string>();
  const turnIds = new Set<string>();
  const steerIds = new Set<string>();
  for (const e of events) {
    conversationIds.add(e.conversationId);
    if (e.turnId) turnIds.add(e.turnId);
    if (isSteerEvent(e)) steerIds.add(e.data.steerId);
  }
  return { conversationIds: [...conversationIds], turnIds: [...turnIds], steerIds: [...steerIds] };
}

/**
 * - `applied`: the read models changed.
 * - `duplicate`: already applied (its turn has seen this seq, or the conversation exists).
 * - `orphan`: it names a turn or steer of another conversation, or a conversation
 *   of another tenant; applying it would corrupt state.
 * - `gap`: its turn's seq skipped at least one event (or the turn has no
 *   `TurnStarted`): the conversation stalls here rather than show a transcript
 *   with a hole in it.
 * - `stalled`: its conversation stalled earlier; the event is parked.
 */
export type ApplyOutcome = 'applied' | 'duplicate' | 'orphan' | 'gap' | 'stalled';

export function applyEvent(ws: WorkingSet, event: SteerlineEvent): ApplyOutcome {
  if (ws.stalled.has(event.conversationId)) return 'stalled';
  const conversationBefore = ws.conversations.get(event.conversationId);
  if (event.type === 'ConversationCreated') {
    if (conversationBefore) return 'duplicate';
    putConversation(ws, evolveConversation(undefined, event)!);
    return 'applied';
  }

  // Ids are global but tenants are not: an event never reaches another tenant's rows.
  if (conversationBefore && conversationBefore.tenantId !== event.tenantId) return 'orphan';
  const turnBefore = ws.turns.get(event.turnId);
  if (turnBefore && turnBefore.conversationId !== event.conversationId) return 'orphan';
  // Turn events carry a gapless per-turn seq (I1): the second guard behind the stream
  // checkpoint against duplicates, and the only one against a missing event.
  const expectedSeq = turnBefore ? turnBefore.lastEventSeq + 1 : 1;
  if (event.seq < expectedSeq) return 'duplicate';
  if (event.seq > expectedSeq || (!turnBefore && event.type !== 'TurnStarted' && event.type !== 'TurnQueued')) {
    putStall(ws, { conversationId: event.conversationId, tenantId: event.tenantId, turnId: event.turnId, eventId: event.id, expectedSeq, foundSeq: event.seq, eventAt: event.at });
    return 'gap';
  }
  let turn = evolveTurn(turnBefore, event);
  const conversation = evolveConversation(conversationBefore, event);
  if (!turn || !conversation) return 'orphan';

  if (isSteerEvent(event)) {
    const steerBefore = ws.steers.get(event.data.steerId);
    if (steerBefore && steerBefore.turnId !== event.turnId) return 'orphan';
    // An edit carries no position: without its steer's row there is nothing it could describe.
    if (!steerBefore && event.type === 'SteerEdited') return 'orphan';
    const steer = evolveSteer(steerBefore, event);
    if (steer !== steerBefore) putSteer(ws, steer);
    turn = countSteer(turn, steerBefore?.status, steer.status);
  }

  const appended = appendMessages(conversation, event);
  if (appended.conversation !== conversationBefore) putConversation(ws, appended.conversation);
  ws.messages.push(...appended.messages);
  putTurn(ws, turn);
  return 'applied';
}

function putConversation(ws: WorkingSet, row: ConversationRow): void {
  ws.conversations.set(row.id, row);
  ws.changed.conversations.add(row.id);
}

function putTurn(ws: WorkingSet, row: TurnRow): void {
  ws.turns.set(row.id, row);
  ws.changed.turns.add(row.id);
}

function putStall(ws: WorkingSet, row: StallRow): void {
  ws.stalled.set(row.conversationId, row);
  ws.changed.stalled.add(row.conversationId);
}

function putSteer(ws: WorkingSet, row: SteerRow): void {
  ws.steers.set(row.id, row);
  ws.changed.steers.add(row.id);
}

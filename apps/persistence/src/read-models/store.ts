import { In, type EntityManager } from 'typeorm';
import type { SteerlineEvent } from '@steerline/contracts';
import { CheckpointEntity, ConversationEntity, SteerEntity, TurnEntity } from './entities';
import type { ConversationRow, SteerRow, TurnRow } from './rows';
import { rowKeys, workingSet, type WorkingSet } from './working-set';

/** Loads every row the events may touch: three queries per batch, whatever its size. */
export async function loadWorkingSet(db: EntityManager, events: SteerlineEvent[]): Promise<WorkingSet> {
  const keys = rowKeys(events);
  // One after another: the queries share the transaction's connection.
  const conversations = keys.conversationIds.length ? await db.findBy(ConversationEntity, { id: In(keys.conversationIds) }) : [];
  const turns = keys.turnIds.length ? await db.findBy(TurnEntity, { id: In(keys.turnIds) }) : [];
  const steers = keys.steerIds.length ? await db.findBy(SteerEntity, { id: In(keys.steerIds) }) : [];
  return workingSet({
    conversations: conversations.map(conversationRow),
    turns: turns.map(turnRow),
    steers: steers.map(steerRow),
  });
}

/** Writes back what changed, one multi-row statement per table. */
export async function saveWorkingSet(db: EntityManager, ws: WorkingSet): Promise<void> {
  const conversations = [...ws.changed.conversations].map((id) => ws.conversations.get(id)!);
  const turns = [...ws.changed.turns].map((id) => ws.turns.get(id)!);
  const steers = [...ws.changed.steers].map((id) => ws.steers.get(id)!);
  await insertRows(db, 'conversations', CONVERSATION_COLUMNS, conversations.map((c) => [c.id, c.tenantId, c.createdAt, c.messageCount]), 'ON CONFLICT (id) DO UPDATE SET message_count = EXCLUDED.message_count');
  await insertRows(db, 'turns', TURN_COLUMNS, turns.map(turnValues), `ON CONFLICT (id) DO UPDATE SET ${updateAll(TURN_COLUMNS, ['status', 'steps', 'text', 'error', 'cancel_reason', 'queued', 'delivered', 'dropped', 'ended_at', 'last_event_seq'])}`);
  await insertRows(db, 'steers', STEER_COLUMNS, steers.map(steerValues), `ON CONFLICT (id) DO UPDATE SET ${updateAll(STEER_COLUMNS, ['status', 'reason', 'step', 'boundary', 'request_step', 'settled_at'])}`);
  // DO NOTHING: a message row, once written, is never rewritten.
  await insertRows(
    db,
    'messages',
    MESSAGE_COLUMNS,
    ws.messages.map((m) => [m.conversationId, m.ordinal, m.role, m.content, m.turnId, m.step, m.steerId, m.toolCallId, json(m.toolCalls)]),
    'ON CONFLICT (conversation_id, ordinal) DO NOTHING',
  );
}

/** The stream sequence the read models reflect, locked until the transaction ends so batches never interleave. */
export async function lockCheckpoint(db: EntityManager, name: string): Promise<number> {
  const rows: { stream_seq: string }[] = await db.query('SELECT stream_seq FROM checkpoints WHERE name = $1 FOR UPDATE', [name]);
  return rows.length ? Number(rows[0].stream_seq) : 0;
}

export async function readCheckpoint(db: EntityManager, name: string): Promise<number> {
  const row = await db.findOneBy(CheckpointEntity, { name });
  return row ? Number(row.streamSeq) : 0;
}

export async function writeCheckpoint(db: EntityManager, name: string, streamSeq: number): Promise<void> {
  await db.query('INSERT INTO checkpoints (name, stream_seq) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET stream_seq = EXCLUDED.stream_seq', [name, streamSeq]);
}

type Columns = readonly (readonly [name: string, pgType: string])[];

const CONVERSATION_COLUMNS: Columns = [['id', 'uuid'], ['tenant_id', 'text'], ['created_at', 'timestamptz'], ['message_count', 'int']];
const TURN_COLUMNS: Columns = [
  ['id', 'uuid'], ['conversation_id', 'uuid'], ['tenant_id', 'text'], ['status', 'text'], ['steps', 'int'], ['prompt', 'text'],
  ['model', 'jsonb'], ['limits', 'jsonb'], ['text', 'text'], ['error', 'jsonb'], ['cancel_reason', 'text'], ['queued', 'int'],
  ['delivered', 'int'], ['dropped', 'int'], ['started_at', 'timestamptz'], ['ended_at', 'timestamptz'], ['last_event_seq', 'int'],
];
const STEER_COLUMNS: Columns = [
  ['id', 'uuid'], ['turn_id', 'uuid'], ['conversation_id', 'uuid'], ['tenant_id', 'text'], ['text', 'text'], ['position', 'int'],
  ['status', 'text'], ['reason', 'text'], ['step', 'int'], ['boundary', 'text'], ['request_step', 'int'], ['queued_at', 'timestamptz'],
  ['settled_at', 'timestamptz'],
];
const MESSAGE_COLUMNS: Columns = [
  ['conversation_id', 'uuid'], ['ordinal', 'int'], ['role', 'text'], ['content', 'text'], ['turn_id', 'uuid'], ['step', 'int'],
  ['steer_id', 'uuid'], ['tool_call_id', 'text'], ['tool_calls', 'jsonb'],
];

/**
 * One INSERT for many rows, passing one array per column through unnest: the
 * statement text and parameter count stay fixed however many rows there are.
 */
async function insertRows(db: EntityManager, table: string, columns: Columns, rows: unknown[][], onConflict: string): Promise<void> {
  if (rows.length === 0) return;
  const arrays = columns.map((_, i) => rows.map((r) => r[i]));
  const unnest = columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ');
  const names = columns.map(([name]) => name).join(', ');
  await db.query(`INSERT INTO ${table} (${names}) SELECT * FROM unnest(${unnest}) ${onConflict}`, arrays);
}

function updateAll(columns: Columns, names: string[]): string {
  for (const n of names) if (!columns.some(([c]) => c === n)) throw new Error(`unknown column ${n}`);
  return names.map((n) => `${n} = EXCLUDED.${n}`).join(', ');
}

function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

function turnValues(t: TurnRow): unknown[] {
  return [
    t.id, t.conversationId, t.tenantId, t.status, t.steps, t.prompt, json(t.model), json(t.limits), t.text, json(t.error),
    t.cancelReason, t.queued, t.delivered, t.dropped, t.startedAt, t.endedAt, t.lastEventSeq,
  ];
}

function steerValues(s: SteerRow): unknown[] {
  return [
    s.id, s.turnId, s.conversationId, s.tenantId, s.text, s.position, s.status, s.reason, s.step, s.boundary, s.requestStep,
    s.queuedAt, s.settledAt,
  ];
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function conversationRow(e: ConversationEntity): ConversationRow {
  return { id: e.id, tenantId: e.tenantId, createdAt: e.createdAt.toISOString(), messageCount: e.messageCount };
}

export function turnRow(e: TurnEntity): TurnRow {
  return { ...e, startedAt: e.startedAt.toISOString(), endedAt: iso(e.endedAt) };
}

export function steerRow(e: SteerEntity): SteerRow {
  return { ...e, queuedAt: e.queuedAt.toISOString(), settledAt: iso(e.settledAt) };
}

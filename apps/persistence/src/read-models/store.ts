import type { DataSource, EntityManager } from 'typeorm';
import type { SteerlineEvent } from '@steerline/contracts';
import { activeGeneration, type Generation } from './generations';
import type { ConversationRow, MessageRow, StallRow, SteerRow, TurnRow } from './rows';
import { rowKeys, workingSet, type WorkingSet } from './working-set';

/*
 * The projector's reads and writes of one batch. A batch costs one statement
 * to load every row its events touch and one to write back everything that
 * changed, whether it holds one event or five hundred: round trips, not rows,
 * are what a batch mostly pays for.
 */

export type Columns = readonly (readonly [name: string, pgType: string])[];

interface Table<R> {
  name: string;
  columns: Columns;
  onConflict: string;
  /** Written as an UPDATE of the stored rows whose key (the first column) it names, not an INSERT. */
  update?: true;
  values(row: R): unknown[];
}

const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

const CONVERSATIONS: Table<ConversationRow> = {
  name: 'conversations',
  columns: [['id', 'uuid'], ['tenant_id', 'text'], ['created_at', 'timestamptz'], ['message_count', 'int']],
  onConflict: 'ON CONFLICT (id) DO UPDATE SET message_count = EXCLUDED.message_count',
  values: (c) => [c.id, c.tenantId, c.createdAt, c.messageCount],
};
// A turn's columns that its events change, and their values; the others (its conversation, tenant,
// prompt, model, limits) are written once, when the turn's row is made.
const TURN_CHANGES: Columns = [
  ['status', 'text'], ['steps', 'int'], ['text', 'text'], ['error', 'jsonb'], ['cancel_reason', 'text'], ['resumes', 'int'], ['queued', 'int'],
  ['delivered', 'int'], ['dropped', 'int'], ['pending_approvals', 'jsonb'], ['started_at', 'timestamptz'], ['ended_at', 'timestamptz'], ['last_event_seq', 'int'],
];
const turnChanges = (t: TurnRow): unknown[] => [
  t.status, t.steps, t.text, json(t.error), t.cancelReason, t.resumes, t.queued, t.delivered, t.dropped, json(t.pendingApprovals), t.startedAt, t.endedAt, t.lastEventSeq,
];
const TURNS: Table<TurnRow> = {
  name: 'turns',
  columns: [['id', 'uuid'], ['conversation_id', 'uuid'], ['tenant_id', 'text'], ['prompt', 'text'], ['model', 'jsonb'], ['limits', 'jsonb'], ...TURN_CHANGES],
  onConflict: updateOnConflict('id', TURN_CHANGES.map(([name]) => name)),
  values: (t) => [t.id, t.conversationId, t.tenantId, t.prompt, json(t.model), json(t.limits), ...turnChanges(t)],
};
/**
 * A stored turn's changes: an UPDATE of the columns that change, by id. A batch touches every
 * turn its events belong to (64 turns with a steer each is 64 rows whatever the batch holds), and
 * writing each one whole, with its prompt, model and limits, was most of a batch's fixed cost.
 */
const TURN_UPDATES: Table<TurnRow> = {
  name: 'turns',
  columns: [['id', 'uuid'], ...TURN_CHANGES],
  onConflict: '',
  update: true,
  values: (t) => [t.id, ...turnChanges(t)],
};
const STEERS: Table<SteerRow> = {
  name: 'steers',
  columns: [
    ['id', 'uuid'], ['turn_id', 'uuid'], ['conversation_id', 'uuid'], ['tenant_id', 'text'], ['text', 'text'], ['position', 'int'],
    ['status', 'text'], ['reason', 'text'], ['step', 'int'], ['boundary', 'text'], ['request_step', 'int'], ['next_turn_id', 'uuid'],
    ['queued_at', 'timestamptz'], ['settled_at', 'timestamptz'],
  ],
  // `text` too: an edit replaces a queued steer's text.
  onConflict: updateOnConflict('id', ['text', 'status', 'reason', 'step', 'boundary', 'request_step', 'next_turn_id', 'settled_at']),
  values: (s) => [s.id, s.turnId, s.conversationId, s.tenantId, s.text, s.position, s.status, s.reason, s.step, s.boundary, s.requestStep, s.nextTurnId, s.queuedAt, s.settledAt],
};
const MESSAGES: Table<MessageRow> = {
  name: 'messages',
  columns: [
    ['conversation_id', 'uuid'], ['ordinal', 'int'], ['role', 'text'], ['content', 'text'], ['turn_id', 'uuid'], ['step', 'int'],
    ['steer_id', 'uuid'], ['tool_call_id', 'text'], ['tool_calls', 'jsonb'],
  ],
  // A message row, once written, is never rewritten.
  onConflict: 'ON CONFLICT (conversation_id, ordinal) DO NOTHING',
  values: (m) => [m.conversationId, m.ordinal, m.role, m.content, m.turnId, m.step, m.steerId, m.toolCallId, json(m.toolCalls)],
};
const STALLS: Table<StallRow> = {
  name: 'stalled_conversations',
  columns: [['conversation_id', 'uuid'], ['tenant_id', 'text'], ['turn_id', 'uuid'], ['event_id', 'uuid'], ['expected_seq', 'int'], ['found_seq', 'int'], ['event_at', 'timestamptz']],
  onConflict: 'ON CONFLICT (conversation_id) DO NOTHING',
  values: (r) => [r.conversationId, r.tenantId, r.turnId, r.eventId, r.expectedSeq, r.foundSeq, r.eventAt],
};

// Written with the batch's rows, so the checkpoint can never pass a batch that did not commit.
const CHECKPOINTS: Table<{ name: string; streamSeq: number }> = {
  name: 'checkpoints',
  columns: [['name', 'text'], ['stream_seq', 'bigint']],
  onConflict: 'ON CONFLICT (name) DO UPDATE SET stream_seq = EXCLUDED.stream_seq',
  values: (c) => [c.name, c.streamSeq],
};

const LOAD_SQL = `SELECT
  (SELECT coalesce(json_agg(c), '[]') FROM conversations c WHERE c.id = ANY($1::uuid[])) AS conversations,
  (SELECT coalesce(json_agg(t), '[]') FROM turns t WHERE t.id = ANY($2::uuid[])) AS turns,
  (SELECT coalesce(json_agg(s), '[]') FROM steers s WHERE s.id = ANY($3::uuid[])) AS steers,
  (SELECT coalesce(json_agg(x), '[]') FROM stalled_conversations x WHERE x.conversation_id = ANY($1::uuid[])) AS stalled`;

/** Loads every row the events may touch, in one statement. */
export async function loadWorkingSet(db: EntityManager, events: SteerlineEvent[]): Promise<WorkingSet> {
  const keys = rowKeys(events);
  if (keys.conversationIds.length === 0) return workingSet();
  // Planned each time, not prepared: a generic plan cannot see how few ids the arrays hold
  // and scans whole tables (4.7 ms against 1.9 ms per 500-event batch, on tables of 5 000 rows).
  const [rows] = (await db.query(LOAD_SQL, [keys.conversationIds, keys.turnIds, keys.steerIds])) as Record<
    'conversations' | 'turns' | 'steers' | 'stalled',
    Record<string, unknown>[]
  >[];
  return workingSet({
    conversations: rows.conversations.map((r) => camel<ConversationRow>(r, ['created_at'])),
    turns: rows.turns.map((r) => camel<TurnRow>(r, ['started_at', 'ended_at'])),
    steers: rows.steers.map((r) => camel<SteerRow>(r, ['queued_at', 'settled_at'])),
    stalled: rows.stalled.map((r) => camel<StallRow>(r, ['event_at'])),
  });
}

const WRITES = [CONVERSATIONS, TURNS, TURN_UPDATES, STEERS, MESSAGES, STALLS, CHECKPOINTS] as Table<unknown>[];
const SAVE_SQL = saveStatement(WRITES);

/** Writes back every row that changed, and the checkpoint when it moved, in one statement. */
export async function saveWorkingSet(db: EntityManager, ws: WorkingSet, checkpoints: { name: string; streamSeq: number }[] = []): Promise<void> {
  const changed = (ids: Iterable<string>, rows: Map<string, unknown>) => [...ids].map((id) => rows.get(id)!);
  const turns = [...ws.changed.turns];
  const rows: unknown[][] = [
    changed(ws.changed.conversations, ws.conversations),
    changed(turns.filter((id) => !ws.storedTurns.has(id)), ws.turns),
    changed(turns.filter((id) => ws.storedTurns.has(id)), ws.turns),
    changed(ws.changed.steers, ws.steers),
    ws.messages,
    changed(ws.changed.stalled, ws.stalled),
    checkpoints,
  ];
  if (rows.every((r) => r.length === 0)) return;
  await prepared(db, 'steerline-save-working-set', SAVE_SQL, WRITES.flatMap((table, i) => columnArrays(table, rows[i])));
}

/**
 * Runs the per-batch write as a named prepared statement on the transaction's
 * connection, so PostgreSQL parses and plans it once per connection instead of
 * once per batch (TypeORM's `query` cannot name one); its plan does not depend
 * on how many rows it writes.
 * Its unqualified table names stay right across generations: PostgreSQL
 * re-parses a prepared statement when search_path differs from its last use.
 */
async function prepared(db: EntityManager, name: string, text: string, values: unknown[]): Promise<unknown[]> {
  const client = (await db.queryRunner!.connect()) as { query(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }> };
  return (await client.query({ name, text, values })).rows;
}

/**
 * The stream sequence the named checkpoints all reflect (the lowest; a missing
 * one is 0), locked until the transaction ends so batches of one partition never
 * interleave. A partition locks its own; a rebuild all of a generation's.
 */
export async function lockCheckpoint(db: EntityManager, names: readonly string[]): Promise<number> {
  const rows: { name: string; stream_seq: string }[] = await db.query('SELECT name, stream_seq FROM checkpoints WHERE name = ANY($1) FOR UPDATE', [names]);
  return lowest(names, rows);
}

/** The stream sequence the named checkpoints all reflect: the lowest, a missing one counting as 0. */
export async function readCheckpoint(db: EntityManager, names: readonly string[]): Promise<number> {
  return lowest(names, await db.query('SELECT name, stream_seq FROM checkpoints WHERE name = ANY($1)', [names]));
}

/** Each name's checkpoint, in the order given (0 when it has none yet). */
export async function readCheckpoints(db: EntityManager, names: readonly string[]): Promise<number[]> {
  const rows: { name: string; stream_seq: string }[] = await db.query('SELECT name, stream_seq FROM checkpoints WHERE name = ANY($1)', [names]);
  const byName = new Map(rows.map((r) => [r.name, Number(r.stream_seq)]));
  return names.map((n) => byName.get(n) ?? 0);
}

function lowest(names: readonly string[], rows: { name: string; stream_seq: string }[]): number {
  const byName = new Map(rows.map((r) => [r.name, Number(r.stream_seq)]));
  return Math.min(...names.map((n) => byName.get(n) ?? 0));
}

/** What the generation the transaction points at holds aside: dead letters, and stalled conversations. */
export async function countTroubles(db: EntityManager): Promise<{ deadLetters: number; stalledConversations: number }> {
  const [r]: { dead_letters: string; stalled: string }[] = await db.query(
    'SELECT (SELECT count(*) FROM dead_letters) AS dead_letters, (SELECT count(*) FROM stalled_conversations) AS stalled',
  );
  return { deadLetters: Number(r.dead_letters), stalledConversations: Number(r.stalled) };
}

/** The active generation and its checkpoint, read together: `names(generation)` says which rows (the lowest wins). */
export async function activeCheckpoint(dataSource: DataSource, names: (generation: Generation) => readonly string[]): Promise<{ generation: Generation; checkpoint: number }> {
  return dataSource.transaction(async (db) => {
    const generation = await activeGeneration(db);
    return { generation, checkpoint: await readCheckpoint(db, names(generation)) };
  });
}

/** The active generation and each of its checkpoints, in the order `names(generation)` gives, read together. */
export async function activeCheckpoints(dataSource: DataSource, names: (generation: Generation) => readonly string[]): Promise<{ generation: Generation; checkpoints: number[] }> {
  return dataSource.transaction(async (db) => {
    const generation = await activeGeneration(db);
    return { generation, checkpoints: await readCheckpoints(db, names(generation)) };
  });
}

/**
 * One INSERT for many rows, passing one array per column through unnest: the
 * statement text and parameter count stay fixed however many rows there are.
 */
export async function insertRows(db: EntityManager, table: string, columns: Columns, rows: unknown[][], onConflict: string): Promise<void> {
  if (rows.length === 0) return;
  await db.query(insertStatement(table, columns, 0, onConflict), columns.map((_, i) => rows.map((r) => r[i])));
}

function insertStatement(table: string, columns: Columns, offset: number, onConflict: string): string {
  const unnest = columns.map(([, type], i) => `$${offset + i + 1}::${type}[]`).join(', ');
  return `INSERT INTO ${table} (${columns.map(([name]) => name).join(', ')}) SELECT * FROM unnest(${unnest}) ${onConflict}`;
}

/** An UPDATE of the rows whose key (the first column) is in the first array, from one array per column. */
function updateStatement(table: string, columns: Columns, offset: number): string {
  const [[key], ...set] = columns;
  const unnest = columns.map(([, type], i) => `$${offset + i + 1}::${type}[]`).join(', ');
  return `UPDATE ${table} t SET ${set.map(([name]) => `${name} = u.${name}`).join(', ')} FROM unnest(${unnest}) AS u(${columns.map(([name]) => name).join(', ')}) WHERE t.${key} = u.${key}`;
}

/** Every table's upsert as one statement of data-modifying CTEs: PostgreSQL runs them all, once each. */
function saveStatement(tables: Table<unknown>[]): string {
  let offset = 0;
  const parts = tables.map((t, i) => {
    const sql = `w${i} AS (${t.update ? updateStatement(t.name, t.columns, offset) : insertStatement(t.name, t.columns, offset, t.onConflict)})`;
    offset += t.columns.length;
    return sql;
  });
  return `WITH ${parts.join(',\n')} SELECT 1`;
}

function columnArrays<R>(table: Table<R>, rows: R[]): unknown[][] {
  const values = rows.map(table.values);
  return table.columns.map((_, i) => values.map((v) => v[i]));
}

function updateOnConflict(key: string, columns: string[]): string {
  return `ON CONFLICT (${key}) DO UPDATE SET ${columns.map((n) => `${n} = EXCLUDED.${n}`).join(', ')}`;
}

/**
 * A row as `json_agg` hands it back, with the names the row types use.
 * Timestamps arrive in PostgreSQL's JSON form (`+00:00`); the rows hold them as
 * `Date.toISOString()` does, like the events they came from.
 */
function camel<R>(record: Record<string, unknown>, timestamps: string[]): R {
  const out: Record<string, unknown> = {};
  for (const key in record) {
    const value = record[key];
    out[camelName(key)] = timestamps.includes(key) && typeof value === 'string' ? new Date(value).toISOString() : value;
  }
  return out as R;
}

// A column's name in the row types, worked out once per column rather than once per row and batch
// (a regular expression per column of every row loaded was 4 % of the projector's CPU, issue 34).
const CAMEL = new Map<string, string>();
function camelName(column: string): string {
  let name = CAMEL.get(column);
  if (name === undefined) CAMEL.set(column, (name = column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())));
  return name;
}

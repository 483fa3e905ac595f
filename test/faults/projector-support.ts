import type { LoggerService } from '@nestjs/common';
import { headers } from '@nats-io/transport-node';
import { Client } from 'pg';
import {
  DEFAULT_LIMITS,
  EVENT_TYPE_HEADER,
  encodeEvent,
  isTerminalTurnEvent,
  messagesOf,
  uuidv7,
  type ConversationView,
  type SteerlineEvent,
  type Subjects,
} from '@steerline/contracts';
import { ensureStream, request, type StoredEvent } from '@steerline/runtime';
import type { HealthView } from '../../apps/persistence/src/queries/query-responders';
import { TENANT, TurnLog, conversationCreated } from '../support/turn-log';
import { createTestDatabase, eventually, NATS_URL, openNats, uniquePrefix, type NatsHandle } from '../support/env';
import { ServiceProcess } from '../support/processes';

/*
 * For projector fault tests: logs built by hand (so a test controls every
 * seq), and an oracle that derives the read models from the log itself.
 */

export { TENANT, TurnLog, conversationCreated };

/** Every log record an in-process app writes, so a test can check what it reported. */
export class CapturingLogger implements LoggerService {
  readonly records: { level: string; message: unknown }[] = [];
  log = (message: unknown) => this.records.push({ level: 'log', message });
  error = (message: unknown) => this.records.push({ level: 'error', message });
  warn = (message: unknown) => this.records.push({ level: 'warn', message });
  fatal = (message: unknown) => this.records.push({ level: 'fatal', message });
}

/**
 * A conversation with a tool call, a steer delivered at the tool boundary, one
 * withdrawn, and a second turn whose steer is delivered at turn end. `first`
 * stops in the middle of the first turn; `rest` finishes it.
 */
export function sampleConversation(): { conversationId: string; first: SteerlineEvent[]; rest: SteerlineEvent[] } {
  const conversationId = uuidv7();
  const a = new TurnLog(conversationId);
  const [kept, withdrawn, late] = [uuidv7(), uuidv7(), uuidv7()];
  const call = { id: 'call_1_0', name: 'echo', args: { text: 'ping' } };
  const model = { provider: 'scripted' as const, name: 'scripted', script: [] };
  const first = [
    conversationCreated(conversationId),
    a.event('TurnStarted', { prompt: 'Find the bug', model, limits: DEFAULT_LIMITS, engineId: 'engine-a' }),
    a.event('ModelRequested', { step: 1, steerIds: [] }),
    a.event('ModelResponded', { step: 1, text: 'Checking', toolCalls: [call] }),
    a.event('ToolCallStarted', { step: 1, toolCallId: call.id, name: call.name, args: call.args }),
    a.event('SteerQueued', { steerId: kept, text: 'Look at the parser', position: 1, queueDepth: 1 }),
    a.event('SteerQueued', { steerId: withdrawn, text: 'Ignore that', position: 2, queueDepth: 2 }),
  ];
  const b = new TurnLog(conversationId);
  const rest = [
    a.event('SteerDropped', { steerId: withdrawn, text: 'Ignore that', position: 2, reason: 'withdrawn' }),
    a.event('ToolCallFinished', { step: 1, toolCallId: call.id, name: call.name, ok: true, output: 'pong', durationMs: 2 }),
    a.event('SteeringDelivered', { steerId: kept, text: 'Look at the parser', position: 1, step: 1, boundary: 'tool_results', requestStep: 2, afterToolCallIds: [call.id], rendered: 'Look at the parser' }),
    a.event('ModelRequested', { step: 2, steerIds: [kept] }),
    a.event('ModelResponded', { step: 2, text: 'Acknowledged: Look at the parser\nFound it', toolCalls: [] }),
    a.event('TurnCompleted', { steps: 2, text: 'Acknowledged: Look at the parser\nFound it' }),
    b.event('TurnStarted', { prompt: 'Fix it', model, limits: DEFAULT_LIMITS, engineId: 'engine-a' }),
    b.event('ModelRequested', { step: 1, steerIds: [] }),
    b.event('SteerQueued', { steerId: late, text: 'Add a test', position: 1, queueDepth: 1 }),
    b.event('ModelResponded', { step: 1, text: 'Fixed', toolCalls: [] }),
    b.event('SteeringDelivered', { steerId: late, text: 'Add a test', position: 1, step: 1, boundary: 'turn_end', requestStep: 2, afterToolCallIds: [], rendered: 'Add a test' }),
    b.event('ModelRequested', { step: 2, steerIds: [late] }),
    b.event('ModelResponded', { step: 2, text: 'Acknowledged: Add a test\nTested', toolCalls: [] }),
    b.event('TurnCompleted', { steps: 2, text: 'Acknowledged: Add a test\nTested' }),
  ];
  return { conversationId, first, rest };
}

/** Appends events as the engine does (type header, message id); resolves with the last stream sequence. */
export async function publish(nats: NatsHandle, events: SteerlineEvent[], s: Subjects = nats.s): Promise<number> {
  let last = 0;
  for (const event of events) {
    const h = headers();
    h.set(EVENT_TYPE_HEADER, event.type);
    const ack = await nats.js.publish(s.conversationEvents(event.tenantId, event.conversationId), encodeEvent(event), { msgID: event.id, headers: h });
    last = ack.seq;
  }
  return last;
}

/** A busy machine's persistence may take seconds to answer; loops that retry pass a short timeout. */
export function health(nats: NatsHandle, timeoutMs = 10_000): Promise<HealthView> {
  return request<HealthView>(nats.nc, nats.s.queryHealth, {}, { timeoutMs, noResponders: 'unavailable' });
}

/** Resolves once some persistence instance reports its checkpoint at `seq` (none may answer for a while). */
export async function projectedUpTo(nats: NatsHandle, seq: number, timeoutMs = 15_000): Promise<HealthView> {
  return eventually(async () => {
    // Short: a request that went to an instance being stopped is asked again rather than waited on.
    const h = await health(nats, 2_000).catch(() => undefined);
    return h && h.checkpoint !== null && h.checkpoint >= seq ? h : undefined;
  }, timeoutMs, `the read models to reach stream sequence ${seq}`);
}

/** Row counts of the active generation's tables; `checkpoint` is the lowest partition's. */
export async function rowCounts(databaseUrl: string): Promise<Record<string, number>> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(`SELECT set_config('search_path', schema_name, false) FROM projection_active JOIN projection_generations ON id = generation`);
    const { rows } = await db.query(`SELECT
      (SELECT count(*) FROM conversations) AS conversations, (SELECT count(*) FROM turns) AS turns,
      (SELECT count(*) FROM steers) AS steers, (SELECT count(*) FROM messages) AS messages,
      (SELECT count(*) FROM dead_letters) AS dead_letters, (SELECT min(stream_seq) FROM checkpoints) AS checkpoint`);
    return Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v ?? 0)]));
  } finally {
    await db.end();
  }
}

/**
 * The read models, derived from the log alone: each conversation's messages
 * are what `messagesOf` makes of its events in stream order, each steer's
 * status is its first settlement, each turn's status its terminal event.
 * Compares them with what the service answers, and every table's row count
 * with what the log holds, so a missing or doubled row fails either way.
 */
export async function expectReadModelsMatchLog(nats: NatsHandle, databaseUrl: string, opts: { ownSubjects?: boolean } = {}): Promise<void> {
  const log: StoredEvent[] = await nats.readAll();
  const byConversation = new Map<string, SteerlineEvent[]>();
  for (const { event } of log) byConversation.set(event.conversationId, [...(byConversation.get(event.conversationId) ?? []), event]);
  const expected = { conversations: byConversation.size, turns: 0, steers: 0, messages: 0, dead_letters: 0, checkpoint: (await nats.jsm.streams.info(nats.s.stream)).state.last_seq };
  for (const [conversationId, events] of byConversation) {
    const messages = events.flatMap(messagesOf);
    const steers = new Map<string, string>();
    const turns = new Map<string, string>();
    for (const e of events) {
      if (e.type === 'SteerQueued' && !steers.has(e.data.steerId)) steers.set(e.data.steerId, 'queued');
      if ((e.type === 'SteeringDelivered' || e.type === 'SteerDropped') && steers.get(e.data.steerId) === 'queued') steers.set(e.data.steerId, e.type === 'SteerDropped' ? 'dropped' : 'delivered');
      if (e.type === 'TurnStarted') turns.set(e.turnId, 'running');
      if (isTerminalTurnEvent(e)) turns.set(e.turnId!, e.type.replace('Turn', '').toLowerCase());
    }
    Object.assign(expected, { turns: expected.turns + turns.size, steers: expected.steers + steers.size, messages: expected.messages + messages.length });
    const view = await request<ConversationView>(nats.nc, nats.s.queryConversation, { tenantId: TENANT, conversationId }, { timeoutMs: 15_000, noResponders: 'unavailable' });
    expect(view.messages).toEqual(messages);
    expect(new Map(view.steers.map((s) => [s.id, s.status]))).toEqual(steers);
    expect(new Map(view.turns.map((t) => [t.id, t.status]))).toEqual(turns);
  }
  const counts = await rowCounts(databaseUrl);
  // Partitions that read only their own subjects commit their checkpoints at their own events: the lowest may trail.
  if (opts.ownSubjects) Object.assign(expected, { checkpoint: counts.checkpoint });
  expect(counts).toEqual(expected);
}

/**
 * A suite's own stream and database for the persistence processes it starts:
 * registers the hooks that create them and, at the end, kill every process and remove both.
 */
export function persistenceProcessSuite() {
  const suite = {
    nats: undefined as unknown as NatsHandle,
    db: undefined as unknown as Awaited<ReturnType<typeof createTestDatabase>>,
    env: {} as Record<string, string>,
    processes: [] as ServiceProcess[],
  };
  beforeAll(async () => {
    const prefix = uniquePrefix();
    suite.db = await createTestDatabase();
    suite.nats = await openNats(prefix);
    suite.env = { NATS_URL, DATABASE_URL: suite.db.url, STEERLINE_PREFIX: prefix };
    await ensureStream(suite.nats.jsm, suite.nats.s);
  });
  afterAll(async () => {
    await Promise.all(suite.processes.map((p) => p.kill()));
    await suite.nats?.close();
    await suite.db?.drop();
  });
  return suite;
}

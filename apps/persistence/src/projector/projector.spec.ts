import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { ConsoleLogger } from '@nestjs/common';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import {
  DEFAULT_LIMITS,
  EVENT_TYPE_HEADER,
  ReceiptSchema,
  checkInvariants,
  encodeEvent,
  subjects,
  uuidv7,
  type ConversationView,
  type Receipt,
  type SteerlineEvent,
  type Subjects,
  type TurnView,
} from '@steerline/contracts';
import { connectNats, request } from '@steerline/runtime';
import { TENANT, TurnLog, conversationCreated } from '../../../../test/support/turn-log';
import { eventually, PG_URL } from '../../../../test/support/env';
import { startPersistence, type PersistenceApp } from '../app';
import { databaseName, loadPersistenceConfig, type PersistenceConfig } from '../config';
import { quoteIdentifier } from '../migrations/database';

jest.setTimeout(60_000);

const base = loadPersistenceConfig(process.env);
const prefix = `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
// The test run's PostgreSQL (TEST_PG_URL: the one at 5432, or the run's embedded one).
const dbUrl = new URL(`${PG_URL}/steerline_test_${randomBytes(4).toString('hex')}`);
const config: PersistenceConfig = { natsUrl: base.natsUrl, databaseUrl: dbUrl.toString(), prefix, streamReplicas: 1, partitions: 1 };
const s: Subjects = subjects(prefix);

const conversationId = uuidv7();
const created = conversationCreated(conversationId);
const first = new TurnLog(conversationId);
const [trains, museums, late] = [uuidv7(), uuidv7(), uuidv7()];
const call = { id: 'call-1', name: 'echo', args: { text: 'say "hi" \\ 👋' } };
const firstTurn = [
  first.event('TurnStarted', { prompt: 'Plan a trip to Lyon', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, engineId: 'engine-a' }),
  first.event('ModelRequested', { step: 1, steerIds: [] }),
  first.event('ModelResponded', { step: 1, text: 'Looking up trains', toolCalls: [call] }),
  first.event('SteerQueued', { steerId: trains, text: 'Prefer trains', position: 1, queueDepth: 1 }),
  first.event('SteerQueued', { steerId: museums, text: 'Skip museums', position: 2, queueDepth: 2 }),
  first.event('ToolCallStarted', { step: 1, toolCallId: call.id, name: call.name, args: call.args }),
  first.event('SteerDropped', { steerId: museums, text: 'Skip museums', position: 2, reason: 'withdrawn' }),
  first.event('ToolCallFinished', { step: 1, toolCallId: call.id, name: call.name, ok: true, output: 'say "hi" \\ 👋', durationMs: 3 }),
  first.event('SteeringDelivered', { steerId: trains, text: 'Prefer trains', position: 1, step: 1, boundary: 'tool_results', requestStep: 2, afterToolCallIds: [call.id], rendered: 'Prefer trains' }),
  first.event('ModelRequested', { step: 2, steerIds: [trains] }),
  first.event('ModelResponded', { step: 2, text: 'Acknowledged: Prefer trains\nTake the TGV.', toolCalls: [] }),
  first.event('TurnCompleted', { steps: 2, text: 'Acknowledged: Prefer trains\nTake the TGV.' }),
];
const second = new TurnLog(conversationId);
const secondTurn = [
  second.event('TurnStarted', { prompt: 'And back?', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, engineId: 'engine-a' }),
  second.event('ModelRequested', { step: 1, steerIds: [] }),
  second.event('SteerQueued', { steerId: late, text: 'Cheapest option', position: 1, queueDepth: 1 }),
];
const log = [created, ...firstTurn, ...secondTurn];

let app: PersistenceApp;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let lastSeq = 0;

async function append(event: SteerlineEvent, msgID = event.id): Promise<number> {
  const h = headers();
  h.set(EVENT_TYPE_HEADER, event.type);
  const ack = await js.publish(s.conversationEvents(event.tenantId, event.conversationId), encodeEvent(event), { msgID, headers: h });
  lastSeq = Math.max(lastSeq, ack.seq);
  return ack.seq;
}

const query = <T>(subject: string, body: unknown) => request<T>(nc, subject, body, { timeoutMs: 15_000, noResponders: 'unavailable' });
const conversation = () => query<ConversationView>(s.queryConversation, { tenantId: TENANT, conversationId });
const snapshot = async () => ({
  conversation: await conversation(),
  turns: await Promise.all([first, second].map((t) => query<TurnView>(s.queryTurn, { tenantId: TENANT, turnId: t.turnId }))),
});

beforeAll(async () => {
  expect(checkInvariants(log.map((event) => ({ event })))).toEqual([]);
  app = await startPersistence(config, { logger: new ConsoleLogger({ json: true, logLevels: ['error', 'fatal'] }) });
  nc = await connectNats(config.natsUrl, 'persistence-spec');
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  for (const event of log) await append(event);
  await app.projector.waitForSeq(lastSeq);
});

afterAll(async () => {
  await app?.close();
  await jsm?.streams.delete(s.stream).catch(() => undefined);
  await nc?.close();
  const admin = new URL(config.databaseUrl);
  admin.pathname = '/postgres';
  const pg = new Client({ connectionString: admin.toString() });
  await pg.connect();
  await pg.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(databaseName(config.databaseUrl))} WITH (FORCE)`);
  await pg.end();
});

describe('the projector', () => {
  it('stores the transcript exactly as the model saw it, in order', async () => {
    const view = await conversation();
    expect(view.id).toBe(conversationId);
    expect(view.createdAt).toBe(created.at);
    expect(view.messages).toStrictEqual([
      { role: 'user', content: 'Plan a trip to Lyon', turnId: first.turnId },
      { role: 'assistant', content: 'Looking up trains', turnId: first.turnId, step: 1, toolCalls: [call] },
      { role: 'tool', content: 'say "hi" \\ 👋', turnId: first.turnId, step: 1, toolCallId: call.id },
      { role: 'user', content: 'Prefer trains', turnId: first.turnId, steerId: trains },
      { role: 'assistant', content: 'Acknowledged: Prefer trains\nTake the TGV.', turnId: first.turnId, step: 2 },
      { role: 'user', content: 'And back?', turnId: second.turnId },
    ]);
  });

  it('lists every steer with its status, by turn start and then position', async () => {
    const view = await conversation();
    expect(view.steers.map((st) => [st.id, st.turnId, st.position, st.status, st.reason, st.step, st.boundary, st.requestStep])).toEqual([
      [trains, first.turnId, 1, 'delivered', undefined, 1, 'tool_results', 2],
      [museums, first.turnId, 2, 'dropped', 'withdrawn', undefined, undefined, undefined],
      [late, second.turnId, 1, 'queued', undefined, undefined, undefined, undefined],
    ]);
    expect(view.steers[2]).not.toHaveProperty('settledAt');
    expect(view.steers[0].settledAt).toBe(firstTurn[8].at);
  });

  it('records each turn with its status, steps and steer counts', async () => {
    const [done, running] = await Promise.all([first, second].map((t) => query<TurnView>(s.queryTurn, { tenantId: TENANT, turnId: t.turnId })));
    expect(done).toMatchObject({ id: first.turnId, conversationId, status: 'completed', steps: 2, text: 'Acknowledged: Prefer trains\nTake the TGV.', steers: { queued: 0, delivered: 1, dropped: 1 }, endedAt: firstTurn[11].at });
    expect(running).toMatchObject({ status: 'running', steps: 0, steers: { queued: 1, delivered: 0, dropped: 0 }, startedAt: secondTurn[0].at });
    expect(running).not.toHaveProperty('endedAt');
    expect((await conversation()).turns.map((t) => t.id)).toEqual([first.turnId, second.turnId]);
  });

  it('answers a steer query with a receipt that carries only the fields its status has', async () => {
    const receipt = (steerId: string, turnId: string) => query<Receipt>(s.querySteer, { tenantId: TENANT, turnId, steerId });
    const delivered = await receipt(trains, first.turnId);
    expect(delivered).toStrictEqual({ steerId: trains, turnId: first.turnId, status: 'delivered', position: 1, text: 'Prefer trains', step: 1, boundary: 'tool_results', requestStep: 2 });
    const dropped = await receipt(museums, first.turnId);
    expect(dropped).toStrictEqual({ steerId: museums, turnId: first.turnId, status: 'dropped', position: 2, text: 'Skip museums', reason: 'withdrawn' });
    expect(ReceiptSchema.parse(await receipt(late, second.turnId))).toStrictEqual({ steerId: late, turnId: second.turnId, status: 'queued', position: 1, text: 'Cheapest option' });
  });

  it('tells another tenant that the conversation, turn and steer do not exist', async () => {
    const other = 'someone-else';
    await expect(query(s.queryConversation, { tenantId: other, conversationId })).rejects.toMatchObject({ code: 'not_found' });
    await expect(query(s.queryTurn, { tenantId: other, turnId: first.turnId })).rejects.toMatchObject({ code: 'not_found' });
    await expect(query(s.querySteer, { tenantId: other, turnId: first.turnId, steerId: trains })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('refuses a malformed query as invalid_request', async () => {
    await expect(query(s.queryTurn, { tenantId: TENANT, turnId: 'not-a-uuid' })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('pages the transcript with afterMessage and limit', async () => {
    const page = await query<ConversationView>(s.queryConversation, { tenantId: TENANT, conversationId, afterMessage: 2, limit: 2 });
    expect(page.messages.map((m) => m.role)).toEqual(['tool', 'user']);
  });

  it('changes nothing when stopped and restarted', async () => {
    const before = await snapshot();
    await app.projector.stop();
    await app.projector.start();
    await app.projector.waitForSeq(lastSeq);
    expect(await snapshot()).toStrictEqual(before);
    expect(await app.projector.lag()).toBe(0);
  });

  it('skips a redelivery of the whole log by stream sequence', async () => {
    const before = await snapshot();
    const checkpoint = app.projector.checkpoint;
    await app.projector.stop();
    // A consumer reset to the start of the stream hands every event out again.
    await jsm.consumers.delete(s.stream, s.projectorConsumer);
    await jsm.consumers.add(s.stream, { durable_name: s.projectorConsumer, filter_subject: s.events, ack_policy: AckPolicy.All, deliver_policy: DeliverPolicy.All });
    await app.projector.start();
    await eventually(async () => {
      const info = await jsm.consumers.info(s.stream, s.projectorConsumer);
      return info.delivered.stream_seq >= lastSeq && info.num_ack_pending === 0;
    }, 10_000, 'the redelivered events to be acknowledged');
    expect(app.projector.checkpoint).toBe(checkpoint);
    expect(await snapshot()).toStrictEqual(before);
  });

  it('applies an event appended twice under different message ids only once', async () => {
    const before = await snapshot();
    for (const event of [firstTurn[3], firstTurn[8], firstTurn[10], secondTurn[2], created]) await append(event, `${event.id}-again`);
    await app.projector.waitForSeq(lastSeq);
    expect(await snapshot()).toStrictEqual(before);
  });

  it('moves past a message it cannot decode and keeps projecting', async () => {
    const ack = await js.publish(s.conversationEvents(TENANT, conversationId), new TextEncoder().encode('not json'), { msgID: uuidv7() });
    const next = second.event('SteerDropped', { steerId: late, text: 'Cheapest option', position: 1, reason: 'withdrawn' });
    await append(next);
    await app.projector.waitForSeq(lastSeq);
    expect(app.projector.checkpoint).toBeGreaterThan(ack.seq);
    const turn = await query<TurnView>(s.queryTurn, { tenantId: TENANT, turnId: second.turnId });
    expect(turn.steers).toEqual({ queued: 0, delivered: 0, dropped: 1 });
    expect(await app.projector.lag()).toBe(0);
  });

  it('retries a batch that fails to commit from the checkpoint, skipping nothing after it', async () => {
    const db = new Client({ connectionString: config.databaseUrl });
    await db.connect();
    try {
      // PostgreSQL refuses this steer until the constraint goes: every attempt at its batch rolls back.
      // The read models live in the active generation's schema.
      await db.query(`SELECT set_config('search_path', schema_name, false) FROM projection_active JOIN projection_generations ON id = generation`);
      await db.query(`ALTER TABLE steers ADD CONSTRAINT spec_poison CHECK (text <> 'poison')`);
      const poison = second.event('SteerQueued', { steerId: uuidv7(), text: 'poison', position: 2, queueDepth: 1 });
      const after = second.event('SteerQueued', { steerId: uuidv7(), text: 'after', position: 3, queueDepth: 2 });
      const stuckAt = app.projector.checkpoint;
      await append(poison);
      await append(after);
      await expect(app.projector.waitForSeq(lastSeq, 1_500)).rejects.toThrow(/did not reach/);
      expect(app.projector.checkpoint).toBe(stuckAt);
      await db.query('ALTER TABLE steers DROP CONSTRAINT spec_poison');
      await app.projector.waitForSeq(lastSeq, 10_000);
      const view = await conversation();
      expect(view.steers.filter((st) => st.turnId === second.turnId).map((st) => [st.text, st.status])).toEqual([
        ['Cheapest option', 'dropped'],
        ['poison', 'queued'],
        ['after', 'queued'],
      ]);
      expect((await query<TurnView>(s.queryTurn, { tenantId: TENANT, turnId: second.turnId })).steers).toEqual({ queued: 2, delivered: 0, dropped: 1 });
    } finally {
      await db.query('ALTER TABLE steers DROP CONSTRAINT IF EXISTS spec_poison');
      await db.end();
    }
  });

  it('reports its health with the database up and no lag', async () => {
    const health = await query(s.queryHealth, {});
    // One dead letter: the message that was not JSON.
    expect(health).toEqual({ database: true, generation: 1, checkpoint: lastSeq, lastSeq, lag: 0, deadLetters: 1, stalledConversations: 0 });
  });
});

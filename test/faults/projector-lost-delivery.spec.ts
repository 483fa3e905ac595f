import { Client } from 'pg';
import { messagesOf, type ConversationView } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startPersistence, type PersistenceApp } from '../../apps/persistence/src/app';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { createTestDatabase, eventually, openNats, uniquePrefix, NATS_URL, type NatsHandle } from '../support/env';
import { CapturingLogger, TENANT, health, publish, sampleConversation } from './projector-support';

/**
 * A fetch whose in-flight messages never arrive (the connection's NATS node
 * died, the consumer's leader changed) leaves the durable consumer counting
 * them delivered: the next fetch hands out later messages, and acking those
 * (AckPolicy.All) acks the lost ones too. Here a "thief" fetches one message
 * from the projector's own consumer and never acks it, which is exactly what
 * such a loss looks like to the projector. One partition: its consumer is the
 * only one pulling, so the test controls which fetch gets which message.
 */
describe('a delivery lost in flight', () => {
  const prefix = uniquePrefix();
  const logger = new CapturingLogger();
  let nats: NatsHandle;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let app: PersistenceApp;
  let pg: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    nats = await openNats(prefix);
    app = await startPersistence(loadPersistenceConfig({ NATS_URL, DATABASE_URL: db.url, STEERLINE_PREFIX: prefix, STEERLINE_PARTITIONS: '1' }), { logger });
    pg = new Client({ connectionString: db.url });
    await pg.connect();
  });

  afterAll(async () => {
    await pg?.end();
    await app?.close();
    await nats?.close();
    await db?.drop();
  });

  const consumerInfo = () => nats.jsm.consumers.info(nats.s.stream, nats.s.projectorConsumer);

  it('is fetched again from the stream, and its conversation projects every event', async () => {
    const { conversationId, first, rest } = sampleConversation();
    const [created, started, stolen, ...after] = [...first, ...rest];
    // The projector is idle with one pull waiting.
    await eventually(async () => (await consumerInfo()).num_waiting > 0, 15_000, "the projector's idle pull");

    // Hold the projector's first commit, so it pulls exactly twice (one batch committing, one prefetched) and then waits.
    await pg.query('BEGIN');
    const [{ schema_name: schema }] = (await pg.query('SELECT schema_name FROM projection_active JOIN projection_generations ON id = generation')).rows;
    await pg.query(`LOCK TABLE "${schema}".checkpoints IN EXCLUSIVE MODE`);
    const createdSeq = await publish(nats, [created]);
    await eventually(async () => (await consumerInfo()).delivered.stream_seq === createdSeq, 15_000, 'the first event delivered');
    const startedSeq = await publish(nats, [started]);
    await eventually(async () => {
      const info = await consumerInfo();
      return info.delivered.stream_seq === startedSeq && info.num_waiting === 0;
    }, 15_000, 'the second event delivered and no pull waiting');

    // The thief takes the next message off the projector's consumer and never acks it.
    const thief = await (await nats.js.consumers.get(nats.s.stream, nats.s.projectorConsumer)).fetch({ max_messages: 1, expires: 10_000 });
    const stolenSeq = await publish(nats, [stolen]);
    const taken: number[] = [];
    for await (const m of thief) taken.push(m.seq);
    expect(taken).toEqual([stolenSeq]);

    const lastSeq = await publish(nats, after);
    await pg.query('COMMIT');
    await app.projector.waitForSeq(lastSeq, 30_000);

    const view = await request<ConversationView>(nats.nc, nats.s.queryConversation, { tenantId: TENANT, conversationId }, { timeoutMs: 15_000, noResponders: 'unavailable' });
    expect(view.messages).toEqual([...first, ...rest].flatMap(messagesOf));
    expect(view.turns.map((t) => t.status)).toEqual(['completed', 'completed']);
    expect(await health(nats)).toMatchObject({ stalledConversations: 0, deadLetters: 0, lag: 0 });
    const warned = logger.records.filter((r) => r.level === 'warn' && (r.message as { lostSeq?: number }).lostSeq === stolenSeq);
    expect(warned).toHaveLength(1);
  });
});

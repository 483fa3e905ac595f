import { Client } from 'pg';
import { messagesOf, type ConversationView } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startPersistence, type PersistenceApp } from '../../apps/persistence/src/app';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { partitionName } from '../../apps/persistence/src/projector/partitions';
import { createTestDatabase, eventually, openNats, uniquePrefix, NATS_URL, type NatsHandle } from '../support/env';
import { TENANT, health, publish, sampleConversation } from './projector-support';

const quiet = { log: () => undefined, error: () => undefined, warn: () => undefined, fatal: () => undefined };

/**
 * With partitions shared between instances, no instance projects every
 * conversation: waiting for a stream sequence must still mean every partition
 * has committed it, whichever instance holds the conversation's partition.
 */
describe('waiting for a checkpoint with partitions on two instances', () => {
  const prefix = uniquePrefix();
  let nats: NatsHandle;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const apps: PersistenceApp[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    nats = await openNats(prefix);
    const config = loadPersistenceConfig({ NATS_URL, DATABASE_URL: db.url, STEERLINE_PREFIX: prefix, STEERLINE_PARTITIONS: '4' });
    for (let i = 0; i < 2; i++) apps.push(await startPersistence(config, { logger: quiet }));
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    await nats?.close();
    await db?.drop();
  });

  it('resolves only once every partition has committed the sequence, so each conversation reads whole', async () => {
    await eventually(() => apps.every((a) => a.projector.partitions.length === 2) || undefined, 20_000, 'two partitions each');
    const [a, b] = apps;
    expect([...a.projector.partitions, ...b.projector.partitions].sort()).toEqual([0, 1, 2, 3]);
    // Every partition has a checkpoint row once it committed a batch.
    const warmUp = sampleConversation();
    await a.projector.waitForSeq(await publish(nats, [...warmUp.first, ...warmUp.rest]), 15_000);

    // b's partitions cannot commit while this transaction holds their checkpoint rows.
    const names = (app: PersistenceApp) => app.projector.partitions.map((i) => partitionName(nats.s.projectorConsumer, i, 4));
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      await pg.query('BEGIN');
      await pg.query(`SELECT set_config('search_path', schema_name, true) FROM projection_active JOIN projection_generations ON id = generation`);
      await pg.query('SELECT 1 FROM checkpoints WHERE name = ANY($1) FOR UPDATE', [names(b)]);
      const conversations = Array.from({ length: 6 }, () => sampleConversation());
      const last = await publish(nats, conversations.flatMap((c) => [...c.first, ...c.rest]));
      let resolved = false;
      const waiting = a.projector.waitForSeq(last, 30_000).then(() => (resolved = true));
      await eventually(async () => {
        const { rows } = await pg.query('SELECT min(stream_seq) AS seq FROM checkpoints WHERE name = ANY($1)', [names(a)]);
        return Number(rows[0].seq) >= last || undefined;
      }, 15_000, "a's own partitions to commit the last sequence");
      // a has committed its conversations, but the others' are held back: not yet.
      expect(resolved).toBe(false);
      expect(a.projector.checkpoint).toBeLessThan(last);
      await pg.query('COMMIT');
      await waiting;
      for (const c of conversations) {
        const view = await request<ConversationView>(nats.nc, nats.s.queryConversation, { tenantId: TENANT, conversationId: c.conversationId }, { timeoutMs: 15_000, noResponders: 'unavailable' });
        expect(view.messages).toEqual([...c.first, ...c.rest].flatMap(messagesOf));
      }
      expect((await health(nats)).checkpoint).toBeGreaterThanOrEqual(last);
    } finally {
      await pg.query('ROLLBACK').catch(() => undefined);
      await pg.end();
    }
  });
});

import { Client } from 'pg';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { partitionNames } from '../../apps/persistence/src/projector/partitions';
import { rebuildReadModels } from '../../apps/persistence/src/rebuild/rebuild';
import { ServiceProcess } from '../support/processes';
import { eventually } from '../support/env';
import { expectReadModelsMatchLog, projectedUpTo, publish, rowCounts, sampleConversation, persistenceProcessSuite } from './projector-support';

/** Which OS process holds each partition's lock, read from PostgreSQL's lock table. */
async function holders(databaseUrl: string, base: string, count: number): Promise<(number | undefined)[]> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const keys = partitionNames(base, count).map((name) => `steerline-projector:${name}`);
    const { rows } = await db.query<{ key: string; app: string }>(
      `SELECT k.key, a.application_name AS app FROM unnest($1::text[]) AS k(key)
       JOIN pg_locks l ON l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND l.objid = (hashtext(k.key)::bigint & 4294967295)::oid
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       JOIN pg_stat_activity a ON a.pid = l.pid`,
      [keys],
    );
    const byKey = new Map(rows.map((r) => [r.key, Number(r.app.split(':')[1])]));
    return keys.map((k) => byKey.get(k));
  } finally {
    await db.end();
  }
}

const count = (held: (number | undefined)[], pid: number) => held.filter((p) => p === pid).length;

/**
 * Two persistence instances share four partitions two and two; when one is
 * killed, the other holds all four within five seconds and the read models
 * converge on the log. A rebuild then builds every partition into a new
 * generation (here with two partitions), and the survivor follows its layout.
 */
describe('partitioned projection', () => {
  const suite = persistenceProcessSuite();
  beforeAll(() => Object.assign(suite.env, { STEERLINE_PARTITIONS: '4' }));

  it('shares partitions between instances, takes over a dead one within 5 s, and rebuilds them all', async () => {
    const { nats, db, env, processes } = suite;
    const a = new ServiceProcess('persistence', env);
    const b = new ServiceProcess('persistence', env);
    processes.push(a, b);
    await Promise.all([a.ready(), b.ready()]);
    const base = nats.s.projectorConsumer;
    await eventually(async () => {
      const held = await holders(db.url, base, 4);
      return count(held, a.pid) === 2 && count(held, b.pid) === 2;
    }, 20_000, 'two partitions each');

    const conversations = Array.from({ length: 8 }, () => sampleConversation());
    const firstLast = await publish(nats, conversations.flatMap((c) => c.first));
    await projectedUpTo(nats, firstLast);
    // Each partition's checkpoint covers every sequence, its own conversations' and the others'.
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      await pg.query(`SELECT set_config('search_path', schema_name, false) FROM projection_active JOIN projection_generations ON id = generation`);
      const { rows } = await pg.query('SELECT name, stream_seq FROM checkpoints ORDER BY name');
      expect(rows.map((r) => r.name)).toEqual(partitionNames(base, 4));
      for (const r of rows) expect(Number(r.stream_seq)).toBeGreaterThanOrEqual(firstLast);
    } finally {
      await pg.end();
    }

    // Events keep arriving while one instance dies.
    const rest = conversations.flatMap((c) => c.rest);
    let killedAt = 0;
    let lastSeq = 0;
    for (const [i, event] of rest.entries()) {
      lastSeq = await publish(nats, [event]);
      if (i === 10) {
        await a.kill();
        killedAt = Date.now();
      }
    }
    await eventually(async () => count(await holders(db.url, base, 4), b.pid) === 4, 10_000, 'the survivor to hold all four partitions');
    expect(Date.now() - killedAt).toBeLessThan(5_000);
    await projectedUpTo(nats, lastSeq);
    await expectReadModelsMatchLog(nats, db.url);

    // A rebuild with another partition count: every partition of the new generation is built, and the survivor follows.
    const report = await rebuildReadModels(loadPersistenceConfig({ ...env, STEERLINE_PARTITIONS: '2' }));
    expect(report.checkpoint).toBe(lastSeq);
    await eventually(async () => count(await holders(db.url, base, 2), b.pid) === 2, 10_000, 'the survivor to project both partitions of the rebuilt generation');
    const more = sampleConversation();
    const finalSeq = await publish(nats, [...more.first, ...more.rest]);
    await projectedUpTo(nats, finalSeq);
    await expectReadModelsMatchLog(nats, db.url);
    expect((await rowCounts(db.url)).checkpoint).toBe(finalSeq);
  });
});

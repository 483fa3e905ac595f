import { subjects } from '@steerline/contracts';
import { ensureStream } from '@steerline/runtime';
import { startPersistence, type PersistenceApp } from '../../apps/persistence/src/app';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { partitionName } from '../../apps/persistence/src/projector/partitions';
import { rebuildReadModels } from '../../apps/persistence/src/rebuild/rebuild';
import { createTestDatabase, eventually, NATS_URL, openNats, uniquePrefix, type NatsHandle } from '../support/env';
import { CapturingLogger, expectReadModelsMatchLog, projectedUpTo, publish, sampleConversation } from './projector-support';

/**
 * Partitions that read only their own subjects (docs/design.md §15, "Partitioned
 * projection"): a log written before subject partitions migrates, by the
 * partitions themselves and by `npm run rebuild`, and afterwards each
 * partition's durable consumer filters `<prefix>.evt.*.*.<i>`.
 */
describe('partitions reading their own subjects', () => {
  const prefix = uniquePrefix();
  const partitioned = subjects(prefix, { subjectPartitions: 4 });
  let nats: NatsHandle;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let app: PersistenceApp | undefined;
  const logger = new CapturingLogger();
  const env = () => ({ NATS_URL, DATABASE_URL: db.url, STEERLINE_PREFIX: prefix, STEERLINE_PARTITIONS: '4', STEERLINE_SUBJECT_PARTITIONS: '4' });
  const filters = async () =>
    Promise.all([0, 1, 2, 3].map(async (i) => (await nats.jsm.consumers.info(nats.s.stream, partitionName(nats.s.projectorConsumer, i, 4))).config.filter_subject));
  const ownFilters = [0, 1, 2, 3].map((i) => `${prefix}.evt.*.*.${i}`);

  beforeAll(async () => {
    db = await createTestDatabase();
    nats = await openNats(prefix);
    await ensureStream(nats.jsm, nats.s);
  });

  afterAll(async () => {
    await app?.close();
    await nats?.close();
    await db?.drop();
  });

  it('projects a log written without partition tokens, then reads only its own subjects', async () => {
    // Written before subject partitions: every event on <prefix>.evt.<tenant>.<conversation>.
    const old = Array.from({ length: 6 }, () => sampleConversation());
    const oldLast = await publish(nats, old.flatMap((c) => c.first));
    app = await startPersistence(loadPersistenceConfig(env()), { logger });
    await projectedUpTo(nats, oldLast);
    // Past the last unpartitioned event each partition follows again, on its own subjects.
    await eventually(async () => JSON.stringify(await filters()) === JSON.stringify(ownFilters) || undefined, 15_000, 'every partition to filter its own subjects');

    // The rest of the old conversations (their history is unpartitioned) and new ones arrive partitioned.
    const fresh = Array.from({ length: 6 }, () => sampleConversation());
    const last = await publish(nats, [...old.flatMap((c) => c.rest), ...fresh.flatMap((c) => [...c.first, ...c.rest])], partitioned);
    expect((await nats.jsm.streams.getMessage(nats.s.stream, { last_by_subj: `${prefix}.evt.*.*.*` }))?.seq).toBe(last);
    // Health and waits count what every partition covers, though idle ones' checkpoints trail.
    await projectedUpTo(nats, last);
    await app.projector.waitForSeq(last, 15_000);
    expect(await app.projector.lag()).toBe(0);
    await expectReadModelsMatchLog(nats, db.url, { ownSubjects: true });
    expect(await filters()).toEqual(ownFilters);
  });

  it('reads only its own events: a partition consumer is handed nothing of the others', async () => {
    const before = await Promise.all([0, 1, 2, 3].map((i) => nats.jsm.consumers.info(nats.s.stream, partitionName(nats.s.projectorConsumer, i, 4))));
    const conversations = Array.from({ length: 8 }, () => sampleConversation());
    const events = conversations.flatMap((c) => [...c.first, ...c.rest]);
    const last = await publish(nats, events, partitioned);
    await projectedUpTo(nats, last);
    const after = await Promise.all([0, 1, 2, 3].map((i) => nats.jsm.consumers.info(nats.s.stream, partitionName(nats.s.projectorConsumer, i, 4))));
    const own = [0, 1, 2, 3].map((i) => events.filter((e) => partitioned.conversationEvents(e.tenantId, e.conversationId).endsWith(`.${i}`)).length);
    // Each consumer delivered exactly its own conversations' events: 1 read per event applied.
    expect(after.map((info, i) => info.delivered.consumer_seq - before[i].delivered.consumer_seq)).toEqual(own);
    expect(own.reduce((a, b) => a + b, 0)).toBe(events.length);
    await expectReadModelsMatchLog(nats, db.url, { ownSubjects: true });
  });

  it('notices an event an engine wrote without a partition token, and projects it', async () => {
    const stray = sampleConversation();
    const last = await publish(nats, [...stray.first, ...stray.rest]);
    await projectedUpTo(nats, last, 20_000);
    await expectReadModelsMatchLog(nats, db.url, { ownSubjects: true });
    const warned = logger.records.filter((r) => r.level === 'warn' && JSON.stringify(r.message).includes('without a partition token'));
    expect(warned.length).toBeGreaterThan(0);
    await eventually(async () => JSON.stringify(await filters()) === JSON.stringify(ownFilters) || undefined, 15_000, 'every partition to filter its own subjects again');
  });

  it('migrates by `npm run rebuild`: the new generation is complete and its partitions read their own subjects', async () => {
    const more = sampleConversation();
    await publish(nats, more.first);
    const report = await rebuildReadModels(loadPersistenceConfig(env()));
    const last = await publish(nats, more.rest, partitioned);
    await eventually(async () => ((await nats.jsm.streams.info(nats.s.stream)).state.last_seq === last ? true : undefined), 5_000, 'the log');
    expect(report.checkpoint).toBeLessThan(last);
    await projectedUpTo(nats, last);
    await expectReadModelsMatchLog(nats, db.url, { ownSubjects: true });
    await eventually(async () => JSON.stringify(await filters()) === JSON.stringify(ownFilters) || undefined, 15_000, 'every partition of the rebuilt generation to filter its own subjects');
  });

  it('with fewer partitions than the subjects have tokens, reads the whole log as before', async () => {
    const report = await rebuildReadModels(loadPersistenceConfig({ ...env(), STEERLINE_PARTITIONS: '2' }));
    await app!.close();
    app = await startPersistence(loadPersistenceConfig({ ...env(), STEERLINE_PARTITIONS: '2' }), { logger });
    const c = sampleConversation();
    const last = await publish(nats, [...c.first, ...c.rest], partitioned);
    expect(last).toBeGreaterThan(report.checkpoint);
    await projectedUpTo(nats, last);
    await expectReadModelsMatchLog(nats, db.url);
    for (const i of [0, 1]) expect((await nats.jsm.consumers.info(nats.s.stream, partitionName(nats.s.projectorConsumer, i, 2))).config.filter_subject).toBe(nats.s.events);
  });
});

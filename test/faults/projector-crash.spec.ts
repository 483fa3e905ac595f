import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import { ServiceProcess } from '../support/processes';
import { eventually } from '../support/env';
import { expectReadModelsMatchLog, projectedUpTo, publish, rowCounts, sampleConversation, persistenceProcessSuite } from './projector-support';

/**
 * The projector commits a batch with its checkpoint, then acks it. A crash in
 * between leaves the batch committed but unacknowledged: JetStream will hand
 * it out again, and the checkpoint must make that change nothing.
 * `STEERLINE_FAULT=exit_after_commit` makes the process SIGKILL itself in
 * exactly that window.
 */
describe('a projector killed between commit and ack', () => {
  const suite = persistenceProcessSuite();
  // One partition: the window is one consumer's commit and ack (every partition's loop is the same code).
  beforeAll(() => Object.assign(suite.env, { STEERLINE_PARTITIONS: '1' }));

  it('restarts from its checkpoint and holds every event of the log exactly once', async () => {
    const { nats, db, env, processes } = suite;
    const [x, y] = [sampleConversation(), sampleConversation()];
    const firstLast = await publish(nats, [...x.first, ...y.first, ...x.rest]);

    const doomed = new ServiceProcess('persistence', { ...env, STEERLINE_FAULT: 'exit_after_commit' });
    processes.push(doomed);
    expect(await doomed.exited).toMatchObject({ signal: 'SIGKILL' });
    // Committed: the read models and the checkpoint hold the batch ...
    expect((await rowCounts(db.url)).checkpoint).toBe(firstLast);
    // ... and never acknowledged: the consumer still counts it as pending.
    const consumer = await nats.jsm.consumers.info(nats.s.stream, nats.s.projectorConsumer);
    expect(consumer.num_ack_pending).toBeGreaterThan(0);
    expect(consumer.ack_floor.stream_seq).toBe(0);

    const lastSeq = await publish(nats, y.rest);
    const survivor = new ServiceProcess('persistence', env);
    processes.push(survivor);
    await survivor.ready();
    await projectedUpTo(nats, lastSeq);
    await expectReadModelsMatchLog(nats, db.url);

    // Had the redelivery come (the ack wait is a minute), it would be skipped by stream sequence.
    // A consumer reset to the start of the stream redelivers every batch at once.
    survivor.signal('SIGTERM');
    expect(await survivor.exited).toMatchObject({ code: 0 });
    await nats.jsm.consumers.delete(nats.s.stream, nats.s.projectorConsumer);
    await nats.jsm.consumers.add(nats.s.stream, { durable_name: nats.s.projectorConsumer, filter_subject: nats.s.events, ack_policy: AckPolicy.All, deliver_policy: DeliverPolicy.All });
    const again = new ServiceProcess('persistence', env);
    processes.push(again);
    await again.ready();
    await eventually(async () => {
      const info = await nats.jsm.consumers.info(nats.s.stream, nats.s.projectorConsumer);
      return info.ack_floor.stream_seq >= lastSeq || undefined;
    }, 10_000, 'the whole log to be redelivered and acked');
    await expectReadModelsMatchLog(nats, db.url);
  });
});

import { EVENT_VERSION, ensureStream, readSubject, uuidv7, type SteerlineEvent } from '@steerline/contracts';
import { EventLog, StaleWriterError, UnappendableEventError } from '../../apps/engine/src/log/event-log';
import { openNats, uniquePrefix, type NatsHandle } from '../support/env';

function events(conversationId: string, n: number): SteerlineEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    id: uuidv7(),
    type: 'ModelRequested',
    version: EVENT_VERSION,
    tenantId: 'default',
    conversationId,
    turnId: conversationId,
    seq: i + 1,
    at: new Date().toISOString(),
    data: { step: i + 1, steerIds: [] },
  }));
}

describe('the engine’s fenced event log', () => {
  let nats: NatsHandle;
  let log: EventLog;
  beforeAll(async () => {
    nats = await openNats(uniquePrefix());
    await ensureStream(nats.jsm, nats.s);
    log = new EventLog(nats.js);
  });
  afterAll(async () => {
    await nats.close();
  });
  const read = async (subject: string) => (await readSubject(nats.js, nats.jsm, nats.s.stream, subject)).map((e) => e.event.id);

  it('a batch is appended in order and the subject’s new last sequence is returned', async () => {
    const cid = uuidv7();
    const subject = nats.s.conversationEvents('default', cid);
    const batch = events(cid, 6);
    const last = await log.append(subject, batch, 0);
    expect(await read(subject)).toEqual(batch.map((e) => e.id));
    const stored = await nats.jsm.streams.getMessage(nats.s.stream, { last_by_subj: subject });
    expect(last).toBe(stored!.seq);
  });

  it('an event over max_payload is refused at once, not retried; the batch before it stands and the error says how far it got', async () => {
    const cid = uuidv7();
    const subject = nats.s.conversationEvents('default', cid);
    const batch = events(cid, 3);
    const huge = { ...batch[1], type: 'ModelResponded', data: { step: 2, text: 'x'.repeat(nats.nc.info!.max_payload), toolCalls: [] } } as SteerlineEvent;
    const started = Date.now();
    const refused = await log.append(subject, [batch[0], huge, batch[2]], 0).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(UnappendableEventError);
    expect(Date.now() - started).toBeLessThan(5000); // the retry window is 10 s
    const stored = await nats.jsm.streams.getMessage(nats.s.stream, { last_by_subj: subject });
    expect(refused).toMatchObject({ appended: 1, lastSeq: stored!.seq, event: { id: huge.id } });
    expect(await read(subject)).toEqual([batch[0].id]);
  });

  it('a stale writer’s batch is refused whole: nothing of it is written', async () => {
    const cid = uuidv7();
    const subject = nats.s.conversationEvents('default', cid);
    const first = events(cid, 1);
    const staleExpectation = 0;
    await log.append(subject, first, 0);
    await expect(log.append(subject, events(cid, 5), staleExpectation)).rejects.toBeInstanceOf(StaleWriterError);
    expect(await read(subject)).toEqual(first.map((e) => e.id));
  });

  it('batches of many conversations appended at once interleave in the stream yet each subject holds its batch in order, once', async () => {
    const batches = Array.from({ length: 30 }, () => {
      const cid = uuidv7();
      return { subject: nats.s.conversationEvents('default', cid), events: events(cid, 5) };
    });
    await Promise.all(batches.map((b) => log.append(b.subject, b.events, 0)));
    for (const b of batches) expect(await read(b.subject)).toEqual(b.events.map((e) => e.id));
    // A retried batch (its acks lost, say) is recognised and not written twice.
    const again = batches[0];
    const last = await log.append(again.subject, again.events, 0);
    expect(await read(again.subject)).toEqual(again.events.map((e) => e.id));
    expect(last).toBe((await nats.jsm.streams.getMessage(nats.s.stream, { last_by_subj: again.subject }))!.seq);
  });
});

import type { NatsConnection } from '@nats-io/transport-node';
import { PubHeaders } from '@nats-io/jetstream';
import { EVENT_VERSION, encodeEvent, uuidv7, type SteerlineEvent } from '@steerline/contracts';
import { connectNats, ensureStream, readSubject } from '@steerline/runtime';
import { EventLog, LogUnavailableError, StaleWriterError, UnappendableEventError } from '../../apps/engine/src/log/event-log';
import { NATS_URL, openNats, uniquePrefix, type NatsHandle } from '../support/env';

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
    log = new EventLog(nats.nc);
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

  it('an append no stream takes (no responders) is retried with the same message id, then refused as the log being unavailable', async () => {
    const cid = uuidv7();
    const short = new EventLog(nats.nc, { retryForMs: 300, ackTimeoutMs: 200 });
    const before = short.counts.publishes;
    const started = Date.now();
    await expect(short.append(`${uniquePrefix()}.nostream.${cid}`, events(cid, 1), 0)).rejects.toBeInstanceOf(LogUnavailableError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(short.counts.publishes - before).toBeGreaterThan(1);
  });

  it('an ack that never comes times out (one sweeping timer for every append), each retry carries the same message id, then the log is unavailable', async () => {
    const cid = uuidv7();
    const subject = `${uniquePrefix()}.silent.${cid}`;
    // A plain subscriber and no stream: the server has a responder, so no 503; nothing ever answers.
    const ids: (string | undefined)[] = [];
    const silent = nats.nc.subscribe(subject, { callback: (_err, msg) => void ids.push(msg.headers?.get(PubHeaders.MsgIdHdr)) });
    try {
      const short = new EventLog(nats.nc, { retryForMs: 400, ackTimeoutMs: 100 });
      const [event] = events(cid, 1);
      const started = Date.now();
      await expect(short.append(subject, [event], 0)).rejects.toBeInstanceOf(LogUnavailableError);
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      expect(ids.length).toBeGreaterThan(1);
      expect(new Set(ids)).toEqual(new Set([event.id]));
    } finally {
      silent.unsubscribe();
    }
  });

  it('a batch asks for one acknowledgement and waits for it once, however many events it holds', async () => {
    const cid = uuidv7();
    const subject = nats.s.conversationEvents('default', cid);
    const before = { ...log.counts };
    await log.append(subject, events(cid, 7), 0);
    expect({ publishes: log.counts.publishes - before.publishes, acks: log.counts.acks - before.acks, ackRounds: log.counts.ackRounds - before.ackRounds }).toEqual({ publishes: 7, acks: 1, ackRounds: 1 });
    expect(await read(subject)).toHaveLength(7);
  });

  it('a batch another conversation’s writer cuts into is still appended whole and in order, and an earlier writer of the same subject is still refused', async () => {
    // Another engine's message lands right after each batch's first event: the connection below
    // publishes it in the same breath, and the server takes one connection's messages in order, so
    // every batch is cut into, every time (no luck involved).
    const cutIns: string[] = [];
    const cutting = new Proxy(nats.nc, {
      get(target, prop) {
        if (prop !== 'publish') {
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        }
        return (subject: string, payload: Uint8Array, opts?: { reply?: string; headers?: { has(k: string): boolean } }) => {
          target.publish(subject, payload, opts as never);
          // A batch's first event: fenced by the subject's sequence, sent without asking for an ack (the one-by-one appends after ask).
          if (opts?.reply || !opts?.headers?.has(PubHeaders.ExpectedLastSubjectSequenceHdr)) return;
          const [foreign] = events(uuidv7(), 1);
          cutIns.push(foreign.id);
          target.publish(nats.s.conversationEvents('default', foreign.conversationId), encodeEvent(foreign));
        };
      },
    }) as NatsConnection;
    const cut = new EventLog(cutting);
    // And a real second engine on its own connection, writing at the same time.
    const second = await connectNats(NATS_URL, 'test-second-writer');
    const other = new EventLog(second);
    const rounds = Array.from({ length: 40 }, () => {
      const cid = uuidv7();
      return { subject: nats.s.conversationEvents('default', cid), events: events(cid, 6) };
    });
    const before = { cut: cut.counts.ackRounds, other: other.counts.ackRounds };
    await Promise.all(rounds.map((r, i) => (i % 2 ? other : cut).append(r.subject, r.events, 0)));
    await second.close();
    // Each cut batch waited once for its ack, was refused, and was appended again one by one.
    const cutBatches = rounds.length / 2;
    expect(cutIns).toHaveLength(cutBatches);
    expect(cut.counts.ackRounds - before.cut).toBe(cutBatches * (1 + 6));
    expect(other.counts.ackRounds - before.other).toBeGreaterThanOrEqual(cutBatches);
    for (const r of rounds) expect(await read(r.subject)).toEqual(r.events.map((e) => e.id));
    const [first] = rounds;
    await expect(log.append(first.subject, events(uuidv7(), 3), 0)).rejects.toBeInstanceOf(StaleWriterError);
    expect(await read(first.subject)).toEqual(first.events.map((e) => e.id));
  });
});

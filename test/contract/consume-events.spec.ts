import { headers } from '@nats-io/transport-node';
import { EVENT_TYPE_HEADER, EventDecodeError, UpcasterRegistry, type SteerlineEvent } from '@steerline/contracts';
import { consumeEvents, ensureStream, type EventConsumer, type EventMeta } from '@steerline/runtime';
import { loadFixtures } from '../../libs/contracts/src/fixtures';
import { eventually, openNats, uniquePrefix, type NatsHandle } from '../support/env';

const fixture = (type: string) => JSON.parse(loadFixtures().find((f) => f.file === `${type}.v1.json`)!.json);
const TURN = ['TurnStarted', 'ModelRequested', 'SteerQueued', 'SteeringDelivered', 'TurnCompleted'];

/** The consumer kit over a real JetStream stream of its own. */
describe('consumeEvents: a durable, checkpointed consumer of the event stream', () => {
  let nats: NatsHandle;
  const consumers: EventConsumer[] = [];

  beforeEach(async () => {
    nats = await openNats(uniquePrefix());
    await ensureStream(nats.jsm, nats.s);
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop()));
    await nats.close();
  });

  /** Appends a message as the engine would (type header), returning its stream sequence. */
  async function append(body: unknown, type = (body as { type?: string }).type ?? 'Unknown'): Promise<number> {
    const h = headers();
    h.set(EVENT_TYPE_HEADER, type);
    const envelope = (typeof body === 'object' && body ? body : {}) as { tenantId?: string; conversationId?: string };
    const { tenantId = 'acme', conversationId = fixture('TurnStarted').conversationId } = envelope;
    const payload = typeof body === 'string' ? body : JSON.stringify(body);
    return (await nats.js.publish(nats.s.conversationEvents(tenantId, conversationId), payload, { headers: h })).seq;
  }

  function recorder() {
    const seen: { type: string; seq: number }[] = [];
    const checkpoints: number[] = [];
    return {
      seen,
      checkpoints,
      onEvent: (e: SteerlineEvent, m: EventMeta) => void seen.push({ type: e.type, seq: m.streamSeq }),
      checkpoint: (seq: number) => void checkpoints.push(seq),
    };
  }

  async function start(opts: Omit<Parameters<typeof consumeEvents>[0], 'nc' | 'prefix'>): Promise<EventConsumer> {
    const consumer = await consumeEvents({ nc: nats.nc, prefix: nats.s.prefix, ...opts });
    consumers.push(consumer);
    return consumer;
  }

  it('with types set, only those reach onEvent, in order; other messages are skipped by header without being parsed', async () => {
    const seqs: number[] = [];
    for (const type of TURN) {
      seqs.push(await append(fixture(type)));
      if (type === 'TurnStarted') seqs.push(await append('this is not JSON', 'ModelResponded'));
    }
    const r = recorder();
    await start({ durable: 'steers', types: ['SteerQueued', 'SteeringDelivered'], onEvent: r.onEvent, checkpoint: r.checkpoint });
    await eventually(() => r.checkpoints.at(-1) === seqs.at(-1), 5000, 'the checkpoint to reach the last message');
    expect(r.seen).toEqual([
      { type: 'SteerQueued', seq: seqs[3] },
      { type: 'SteeringDelivered', seq: seqs[4] },
    ]);
    expect(r.checkpoints).toEqual([...r.checkpoints].sort((a, b) => a - b));
  });

  it('a failing callback stops the consumer unacked; a restart from the stored checkpoint handles every event exactly once, in order', async () => {
    const seqs: number[] = [];
    for (const type of TURN) seqs.push(await append(fixture(type)));
    const handled: number[] = [];
    let stored = 0;
    const first = await start({
      durable: 'board',
      onEvent: (_e, m) => {
        if (m.streamSeq === seqs[2]) throw new Error('database is down');
        handled.push(m.streamSeq);
      },
      checkpoint: (seq) => void (stored = seq),
    });
    await expect(first.done).rejects.toThrow('database is down');
    expect(stored).toBe(seqs[1]);

    const second = await start({ durable: 'board', fromSeq: stored + 1, onEvent: (_e, m) => void handled.push(m.streamSeq), checkpoint: (seq) => void (stored = seq) });
    await eventually(() => stored === seqs.at(-1), 5000, 'the second run to catch up');
    expect(handled).toEqual(seqs);
    await second.stop();

    // Without fromSeq the durable resumes after its own last ack: only new events arrive.
    const later = await append(fixture('TurnCompleted'));
    const third: number[] = [];
    await start({ durable: 'board', onEvent: (_e, m) => void third.push(m.streamSeq) });
    await eventually(() => third.length > 0, 5000, 'the new event');
    expect(third).toEqual([later]);
  });

  it('a checkpoint behind the durable wins: the durable is moved back and the events after the checkpoint come again', async () => {
    const seqs: number[] = [];
    for (const type of TURN) seqs.push(await append(fixture(type)));
    const r1 = recorder();
    const first = await start({ durable: 'replay', onEvent: r1.onEvent, checkpoint: r1.checkpoint });
    await eventually(() => r1.checkpoints.at(-1) === seqs.at(-1), 5000, 'the first run');
    await first.stop();
    // The consumer's database was restored from a backup taken after the second event.
    const r2 = recorder();
    await start({ durable: 'replay', fromSeq: seqs[2], onEvent: r2.onEvent, checkpoint: r2.checkpoint });
    await eventually(() => r2.checkpoints.at(-1) === seqs.at(-1), 5000, 'the replay');
    expect(r2.seen.map((e) => e.seq)).toEqual(seqs.slice(2));
  });

  it('a checkpoint ahead of the durable wins too: the messages before it are acked without reaching onEvent', async () => {
    const idle = await start({ durable: 'ahead', onEvent: () => undefined });
    await idle.stop();
    const seqs: number[] = [];
    for (const type of TURN) seqs.push(await append(fixture(type)));
    const r = recorder();
    await start({ durable: 'ahead', fromSeq: seqs[3], onEvent: r.onEvent, checkpoint: r.checkpoint });
    await eventually(() => r.checkpoints.at(-1) === seqs.at(-1), 5000, 'the consumer to catch up');
    expect(r.seen.map((e) => e.seq)).toEqual(seqs.slice(3));
  });

  it('an unknown event type is skipped; an event from a newer writer stops the consumer with a typed EventDecodeError', async () => {
    const started = await append(fixture('TurnStarted'));
    await append({ ...fixture('TurnStarted'), type: 'TurnPaused' });
    const newer = await append({ ...fixture('TurnCompleted'), version: 2 });
    const r = recorder();
    const consumer = await start({ durable: 'strict', onEvent: r.onEvent, checkpoint: r.checkpoint });
    const failure = await consumer.done.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(EventDecodeError);
    expect(failure).toMatchObject({ reason: 'unknown_version', details: { streamSeq: newer } });
    expect(r.seen).toEqual([{ type: 'TurnStarted', seq: started }]);
    // The message that stopped it is not checkpointed (skipped ones are, once caught up or every few hundred).
    expect(r.checkpoints).toEqual([started]);
  });

  it('upcasters given to the consumer turn an older version in the log into the current one', async () => {
    const queued = fixture('SteerQueued');
    const { position, queueDepth: _d, ...rest } = queued.data;
    await append({ ...queued, version: 0, data: { ...rest, order: position } });
    const registry = new UpcasterRegistry().register('SteerQueued', 0, (e) => {
      const { order, ...data } = e.data as { order: number };
      return { ...e, data: { ...data, position: order, queueDepth: 1 } };
    });
    const events: SteerlineEvent[] = [];
    await start({ durable: 'history', upcasters: registry, onEvent: (e) => void events.push(e) });
    await eventually(() => events.length === 1, 5000, 'the upcast event');
    expect(events[0]).toMatchObject({ type: 'SteerQueued', version: 1, data: { position, queueDepth: 1 } });
  });

  it('a bad durable name, fromSeq or event type is refused before anything is created', async () => {
    const onEvent = () => undefined;
    await expect(consumeEvents({ nc: nats.nc, prefix: nats.s.prefix, durable: 'a.b', onEvent })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(consumeEvents({ nc: nats.nc, prefix: nats.s.prefix, durable: 'ok', fromSeq: 0, onEvent })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(consumeEvents({ nc: nats.nc, prefix: nats.s.prefix, durable: 'ok', types: ['Nope' as never], onEvent })).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await nats.jsm.consumers.list(nats.s.stream).next()).toEqual([]);
  });
});

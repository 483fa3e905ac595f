import { request } from 'node:http';
import { headers } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { EVENT_TYPE_HEADER, uuidv7 } from '@steerline/contracts';
import { encodeJson, ensureStream, jetstreamManager, streamConfig } from '@steerline/runtime';
import { startGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { jsonLogger } from '../../apps/gateway/src/logger';
import { NATS_URL, startHarness, type Harness } from '../../apps/gateway/src/testing/harness';
import { openSseWatcher, type SseWatcher } from '../../scripts/bench/sse-watcher';
import { eventually } from '../support/env';

/**
 * Event streams at scale (issue 24): a gateway alone on a fresh stream, the
 * test appending events itself, so the stream holds no consumer but the
 * watchers' (there must be none) and every sequence is known.
 */
describe('event streams follow the log without a JetStream consumer per watcher', () => {
  const harnesses: Harness[] = [];
  const open = async (env: Record<string, string> = {}, opts: { olderStream?: boolean } = {}) => {
    const h = await startHarness({ STEERLINE_RATE_LIMIT: '0', ...env });
    harnesses.push(h);
    const jsm = await jetstreamManager(h.nc);
    if (opts.olderStream) {
      // As the first release made it: no republish rule, and NATS cannot add one later.
      const { republish: _, ...older } = streamConfig(h.s);
      await jsm.streams.add(older);
    } else await ensureStream(jsm, h.s);
    return h;
  };
  afterAll(async () => {
    for (const h of harnesses) await h.close().catch(() => undefined);
  });

  /** Appends an event of `bytes` size to the conversation; resolves with its stream sequence. */
  const append = async (js: JetStreamClient, h: Harness, cid: string, type = 'Probe', bytes = 0) => {
    const hdrs = headers();
    hdrs.set(EVENT_TYPE_HEADER, type);
    const ack = await js.publish(h.s.conversationEvents('default', cid), encodeJson({ type, pad: 'x'.repeat(bytes) }), { headers: hdrs });
    return ack.seq;
  };
  const watch = (h: Harness, cid: string, hdrs: Record<string, string> = {}, query = '') => openSseWatcher(`${h.gateway.url}/v1/conversations/${cid}/events${query}`, hdrs);
  const gauge = async (h: Harness, name: string) => {
    const text = await (await fetch(`${h.gateway.url}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);
  };

  it.each([
    ['the stream republishes stored events', false],
    ['the stream was made by an older release (no republish rule)', true],
  ])('a watcher that connects while events are being appended gets every event after its position exactly once (%s)', async (_, olderStream) => {
    const h = await open({}, { olderStream });
    const js = jetstream(h.nc);
    const cid = uuidv7();
    const other = uuidv7();
    const seqs = [await append(js, h, cid)];
    const watchers: Array<{ after: number; w: Promise<SseWatcher> }> = [];
    // Another conversation's events in between, so this one's sequences have holes.
    for (let i = 0; i < 200; i++) {
      seqs.push(await append(js, h, cid));
      if (i % 3 === 0) await append(js, h, other);
      if (i % 10 === 0) {
        const after = seqs[Math.floor(Math.random() * seqs.length)];
        watchers.push({ after, w: watch(h, cid, { 'Last-Event-ID': String(after) }) });
        watchers.push({ after: 0, w: watch(h, cid) });
      }
    }
    const last = seqs.at(-1)!;
    for (const { after, w } of watchers) {
      const watcher = await w;
      await watcher.reached(last);
      watcher.close();
      expect(watcher.ids).toEqual(seqs.filter((s) => s > after));
    }
    expect(await eventually(async () => ((await gauge(h, 'steerline_watched_conversations')) === 0 ? true : undefined))).toBe(true);
  });

  it('2 000 watchers hold no JetStream consumer once live, and each gets every new event exactly once', async () => {
    const h = await open({ STEERLINE_SSE_MAX_STREAMS_PER_KEY: '5000' });
    const js = jetstream(h.nc);
    const conversations = Array.from({ length: 100 }, () => uuidv7());
    const before = new Map<string, number>();
    for (const cid of conversations) before.set(cid, await append(js, h, cid));
    const watchers: Array<{ cid: string; w: SseWatcher }> = [];
    for (let batch = 0; batch < 10; batch++) {
      const opened = await Promise.all(conversations.flatMap((cid) => [watch(h, cid), watch(h, cid)].map(async (w) => ({ cid, w: await w }))));
      watchers.push(...opened);
    }
    expect(watchers.every(({ w }) => w.status === 200)).toBe(true);
    await eventually(async () => ((await gauge(h, 'steerline_event_streams_live')) === 2_000 ? true : undefined), 30_000, '2 000 watchers live');
    const info = await (await jetstreamManager(h.nc)).streams.info(h.s.stream);
    expect(info.state.consumer_count).toBe(0);
    expect(await gauge(h, 'steerline_watched_conversations')).toBe(100);

    const appended = new Map<string, number[]>();
    for (let round = 0; round < 2; round++) {
      await Promise.all(conversations.map(async (cid) => appended.set(cid, [...(appended.get(cid) ?? []), await append(js, h, cid)])));
    }
    for (const { cid, w } of watchers) {
      await w.reached(appended.get(cid)!.at(-1)!);
      expect(w.ids).toEqual([before.get(cid), ...appended.get(cid)!]);
    }
    for (const { w } of watchers) w.close();
  });

  it('watchers cut by a gateway restart while events are appended resume on the new gateway with no gap and no duplicate', async () => {
    const h = await open();
    const js = jetstream(h.nc);
    const cid = uuidv7();
    const seqs = [await append(js, h, cid)];
    const watchers = await Promise.all(Array.from({ length: 50 }, () => watch(h, cid)));
    await eventually(async () => ((await gauge(h, 'steerline_event_streams_live')) === 50 ? true : undefined));
    let appending = true;
    const appender = (async () => {
      while (appending) seqs.push(await append(js, h, cid));
    })();
    await eventually(() => (seqs.length > 20 ? true : undefined));
    await h.gateway.close();
    await Promise.all(watchers.map((w) => w.reached(Number.MAX_SAFE_INTEGER)));
    const second = await startGateway(loadGatewayConfig({ NATS_URL, STEERLINE_PREFIX: h.s.prefix, PORT: '0', STEERLINE_RATE_LIMIT: '0' }), { logger: jsonLogger(['error']) });
    try {
      const resumed = await Promise.all(
        watchers.map((w) => openSseWatcher(`${second.url}/v1/conversations/${cid}/events`, { 'Last-Event-ID': String(w.ids.at(-1)) })),
      );
      await eventually(() => (seqs.length > 40 ? true : undefined));
      appending = false;
      await appender;
      for (const [i, w] of resumed.entries()) {
        await w.reached(seqs.at(-1)!);
        w.close();
        expect([...watchers[i].ids, ...w.ids]).toEqual(seqs);
      }
    } finally {
      appending = false;
      await second.close();
    }
  });

  it('a reader that never reads is cut off with a comment naming its Last-Event-ID, and resumes from there with nothing lost', async () => {
    const h = await open({ STEERLINE_SSE_BUFFER_BYTES: '16384' });
    const js = jetstream(h.nc);
    const cid = uuidv7();
    const seqs = [await append(js, h, cid)];
    const stalled = await watch(h, cid);
    await stalled.reached(seqs[0]);
    await eventually(async () => ((await gauge(h, 'steerline_event_streams_live')) === 1 ? true : undefined));
    // The client stops reading: the socket's buffers fill, then the gateway's.
    stalled.res.pause();
    for (let i = 0; i < 60; i++) seqs.push(await append(js, h, cid, 'Probe', 200_000));
    await eventually(async () => ((await gauge(h, 'steerline_event_streams_open')) === 0 ? true : undefined), 15_000, 'the stalled stream to be ended');

    stalled.res.resume();
    await stalled.reached(Number.MAX_SAFE_INTEGER);
    const got = stalled.ids.at(-1)!;
    expect(got).toBeLessThan(seqs.at(-1)!);
    expect(stalled.ids).toEqual(seqs.filter((s) => s <= got));
    expect(stalled.comments).toContain(`reader too slow: reconnect with Last-Event-ID: ${got}`);

    const resumed = await watch(h, cid, { 'Last-Event-ID': String(got) });
    await resumed.reached(seqs.at(-1)!);
    resumed.close();
    expect([...stalled.ids, ...resumed.ids]).toEqual(seqs);
  });

  it('caps open streams per key and per gateway with 429 rate_limited, and frees a slot when a stream closes', async () => {
    const h = await open({ STEERLINE_API_KEYS: 'k1:default,k2:default', STEERLINE_SSE_MAX_STREAMS: '3', STEERLINE_SSE_MAX_STREAMS_PER_KEY: '2' });
    const cid = uuidv7();
    await append(jetstream(h.nc), h, cid);
    const k1 = { authorization: 'Bearer k1' };
    const k2 = { authorization: 'Bearer k2' };
    const a = await watch(h, cid, k1);
    const b = await watch(h, cid, k1);
    const refusedKey = await watch(h, cid, k1);
    expect([a.status, b.status, refusedKey.status]).toEqual([200, 200, 429]);
    const c = await watch(h, cid, k2);
    const refusedGateway = await watch(h, cid, k2);
    expect([c.status, refusedGateway.status]).toEqual([200, 429]);
    a.close();
    const again = await eventually(async () => {
      const w = await watch(h, cid, k2);
      if (w.status === 200) return w;
      w.close();
      return undefined;
    });
    for (const w of [b, c, again, refusedKey, refusedGateway]) w.close();
  });

  it('interleaves live messages without an id, leaves them out with ?live=0 and refuses another value of live', async () => {
    const h = await open();
    const js = jetstream(h.nc);
    const cid = uuidv7();
    const first = await append(js, h, cid);
    const withLive = await watch(h, cid);
    const withoutLive = await watch(h, cid, {}, '?live=0');
    await eventually(async () => ((await gauge(h, 'steerline_event_streams_live')) === 2 ? true : undefined));
    h.nc.publish(h.s.conversationLive('default', cid), encodeJson({ type: 'ModelDelta', turnId: uuidv7(), step: 1, index: 0, text: 'Hel' }));
    const second = await append(js, h, cid);
    await withLive.reached(second);
    await withoutLive.reached(second);
    // Live messages and stored events travel separately: no order between them is promised.
    await eventually(() => (withLive.live.length > 0 ? true : undefined));
    expect(withLive.ids).toEqual([first, second]);
    expect(withLive.live).toEqual(['ModelDelta']);
    expect(withoutLive.ids).toEqual([first, second]);
    expect(withoutLive.live).toEqual([]);
    withLive.close();
    withoutLive.close();
    const bad = await new Promise<number>((resolve, reject) =>
      request(`${h.gateway.url}/v1/conversations/${cid}/events?live=yes`, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .once('error', reject)
        .end(),
    );
    expect(bad).toBe(400);
  });
});

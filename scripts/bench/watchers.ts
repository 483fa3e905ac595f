import type { NatsConnection } from '@nats-io/transport-node';
import { headers } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { EVENT_TYPE_HEADER, subjects, uuidv7 } from '@steerline/contracts';
import { encodeJson, ensureStream } from '@steerline/runtime';
import { measureLivePath } from './live-path';
import { spawnApp, stop } from './processes';
import { openSseWatcher } from './sse-watcher';
import { median, percentile, pool, rssMiB } from './stats';

/**
 * Event streams at scale (issue 24), on a gateway process of its own and a
 * stream the bench appends to itself: idle watchers' cost (JetStream
 * consumers, RSS), one appended event's fan-out to all of them, and a
 * reconnect storm after a gateway restart with every watcher checked for
 * gaps and duplicates.
 */
export async function measureWatchers(opts: { natsUrl: string; prefix: string; nc: NatsConnection; idle: number; storm: number; log: (m: string) => void }) {
  const s = subjects(`${opts.prefix}w`);
  const jsm = await jetstreamManager(opts.nc);
  await ensureStream(jsm, s);
  const js = jetstream(opts.nc);
  const append = async (cid: string) => {
    const h = headers();
    h.set(EVENT_TYPE_HEADER, 'Probe');
    return (await js.publish(s.conversationEvents('default', cid), encodeJson({ type: 'Probe', at: Date.now() }), { headers: h })).seq;
  };
  const env = {
    NATS_URL: opts.natsUrl,
    STEERLINE_PREFIX: s.prefix,
    PORT: '0',
    STEERLINE_RATE_LIMIT: '0',
    STEERLINE_SSE_MAX_STREAMS: '30000',
    STEERLINE_SSE_MAX_STREAMS_PER_KEY: '30000',
    STEERLINE_SSE_HEARTBEAT_MS: '60000',
  };
  let gateway = await spawnApp('gateway', env);
  try {
    const url = () => String(gateway.ready.url);
    const consumers = async () => (await jsm.streams.info(s.stream)).state.consumer_count;
    const open = (cid: string, after?: number) => openSseWatcher(`${url()}/v1/conversations/${cid}/events`, after ? { 'Last-Event-ID': String(after) } : {}, { keepArrivals: true });

    // 1. Idle watchers of one conversation: what they hold, and one event's fan-out.
    const cid = uuidv7();
    await append(cid);
    await new Promise((r) => setTimeout(r, 1_000));
    const rssBefore = rssMiB(gateway.child.pid!);
    opts.log(`${opts.idle} idle watchers`);
    const t0 = performance.now();
    const idle = await pool(Array.from({ length: opts.idle }, () => () => open(cid)), 200);
    await liveCount(url(), opts.idle, 120_000);
    const openSeconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 2_000));
    const rssIdle = rssMiB(gateway.child.pid!);
    const idleConsumers = await consumers();
    const fanOut: { p50: number; p99: number; all: number }[] = [];
    for (let round = 0; round < 5; round++) {
      const sent = performance.now();
      const seq = await append(cid);
      await Promise.all(idle.map((w) => w.reached(seq)));
      const took = idle.map((w) => (w.arrivals.get(seq) ?? NaN) - sent);
      fanOut.push({ p50: percentile(took, 50), p99: percentile(took, 99), all: Math.max(...took) });
      await new Promise((r) => setTimeout(r, 300));
    }
    for (const w of idle) w.close();
    await liveCount(url(), 0, 60_000);
    opts.log('live output path');
    const livePath = await measureLivePath({ nc: opts.nc, s, gatewayUrl: url(), cid });

    // 2. A reconnect storm: watchers of many conversations, events appended throughout, the gateway killed and started again.
    opts.log(`reconnect storm of ${opts.storm} watchers`);
    const conversations = Array.from({ length: Math.max(1, Math.round(opts.storm / 10)) }, () => uuidv7());
    const seqs = new Map<string, number[]>();
    for (const c of conversations) seqs.set(c, [await append(c)]);
    const first = await pool(conversations.flatMap((c) => Array.from({ length: 10 }, () => async () => ({ cid: c, w: await open(c) }))).slice(0, opts.storm), 200);
    await liveCount(url(), first.length, 120_000);
    let appending = true;
    const appender = (async () => {
      for (let i = 0; appending; i++) {
        const c = conversations[i % conversations.length];
        seqs.get(c)!.push(await append(c));
        // About 200 events a second across the conversations: a busy deployment's share of one gateway.
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    await stop(gateway.child);
    await Promise.all(first.map(({ w }) => w.reached(Number.MAX_SAFE_INTEGER)));
    gateway = await spawnApp('gateway', env);
    const restarted = performance.now();
    const second = await pool(first.map(({ cid: c, w }) => () => open(c, w.ids.at(-1))), 500);
    opts.log(`storm: ${second.length} streams answered in ${((performance.now() - restarted) / 1000).toFixed(2)} s`);
    await liveCount(url(), second.length, 120_000);
    const stormSeconds = (performance.now() - restarted) / 1000;
    appending = false;
    await appender;
    for (const c of conversations) seqs.get(c)!.push(await append(c));
    await Promise.all(second.map((w, i) => w.reached(seqs.get(first[i].cid)!.at(-1)!)));
    let broken = 0;
    for (const [i, { cid: c, w }] of first.entries()) {
      const got = [...w.ids, ...second[i].ids];
      const want = seqs.get(c)!;
      if (got.length !== want.length || got.some((seq, k) => seq !== want[k])) broken++;
    }
    const stormConsumers = await consumers();
    for (const w of second) w.close();
    return {
      idle: opts.idle,
      openSeconds,
      consumersPerWatcher: idleConsumers / opts.idle,
      rssBefore,
      rssIdle,
      kibPerWatcher: ((rssIdle - rssBefore) * 1024) / opts.idle,
      fanOutP50: median(fanOut.map((f) => f.p50)),
      fanOutP99: median(fanOut.map((f) => f.p99)),
      fanOutAll: median(fanOut.map((f) => f.all)),
      storm: first.length,
      stormEvents: [...seqs.values()].reduce((n, l) => n + l.length, 0),
      stormSeconds,
      stormBroken: broken,
      stormConsumers,
      livePath,
    };
  } finally {
    await stop(gateway.child);
    await jsm.streams.delete(s.stream).catch(() => undefined);
  }
}

/** Waits until the gateway reports `n` event streams past their replay. */
async function liveCount(url: string, n: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await (await fetch(`${url}/metrics`)).text();
    const live = Number(/^steerline_event_streams_live (\d+)/m.exec(text)?.[1]);
    if (live === n) return;
    if (Date.now() > deadline) throw new Error(`${live} of ${n} event streams live after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

import type { ChildProcess } from 'node:child_process';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { uuidv7 } from '@steerline/contracts';
import { BucketStore } from '../../apps/gateway/src/rate-limit/bucket-store';
import type { Row } from './report';
import { spawnApp, stop } from './processes';
import { median, percentile } from './stats';

/** The shared limit the measured gateway enforces: high enough that these requests are never refused. */
const LIMIT = { STEERLINE_RATE_LIMIT: '5000', STEERLINE_RATE_BURST: '10000' };
const ROUNDS = 1500;

/**
 * What the shared rate limit adds to a request: the same limited route
 * (`GET /v1/turns/:tid`, a read-model query) on a gateway without a limit and on
 * one with the shared KV limit, interleaved request by request; and the
 * compare-and-set a lease costs (KV read + write), sequentially.
 */
export async function measureRateLimit(opts: { env: Record<string, string>; nc: NatsConnection; prefix: string }) {
  const children: ChildProcess[] = [];
  try {
    const off = await spawnApp('gateway', { ...opts.env, STEERLINE_RATE_LIMIT: '0' });
    children.push(off.child);
    const on = await spawnApp('gateway', { ...opts.env, ...LIMIT });
    children.push(on.child);
    const urls = [String(off.ready.url), String(on.ready.url)];
    const samples: number[][] = [[], []];
    for (let i = 0; i < ROUNDS * 2; i++) {
      const which = i % 2;
      const t0 = performance.now();
      const res = await fetch(`${urls[which]}/v1/turns/${uuidv7()}`);
      await res.arrayBuffer();
      if (res.status === 429) throw new Error('the rate-limit bench was refused: raise its limit');
      // The first third warms both up.
      if (i >= (ROUNDS * 2) / 3) samples[which].push(performance.now() - t0);
    }
    const store = new BucketStore(opts.nc, `${opts.prefix}_benchlimits`, 60_000, 1_000);
    const cas: number[] = [];
    for (let i = 0; i < 300; i++) {
      const t0 = performance.now();
      const read = await store.read('bench');
      await store.write('bench', { tokens: i, at: Date.now() }, read.revision);
      if (i >= 50) cas.push(performance.now() - t0);
    }
    return {
      off: { p50: median(samples[0]), p99: percentile(samples[0], 99) },
      on: { p50: median(samples[1]), p99: percentile(samples[1], 99) },
      cas: { p50: median(cas), p99: percentile(cas, 99) },
    };
  } finally {
    for (const child of children) await stop(child);
    await (await jetstreamManager(opts.nc)).streams.delete(`KV_${opts.prefix}_benchlimits`).catch(() => undefined);
  }
}

export function rateLimitRows(r: Awaited<ReturnType<typeof measureRateLimit>>): Row[] {
  return [
    { group: 'steerline', name: 'limited request (GET /v1/turns/:tid), no rate limit, p50', value: r.off.p50, unit: 'ms' },
    { group: 'steerline', name: 'same, shared rate limit (NATS KV, 5000/s per key), p50', value: r.on.p50, unit: 'ms', floor: r.off.p50, floorName: 'no rate limit' },
    { group: 'steerline', name: 'same, shared rate limit, p99', value: r.on.p99, unit: 'ms', floor: r.off.p99, floorName: 'no rate limit, p99' },
    { group: 'raw', name: 'rate-limit lease: KV read + compare-and-set write, p50', value: r.cas.p50, unit: 'ms' },
  ];
}

import { createWriteStream } from 'node:fs';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjects } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { deleteStreams, spawnApp, stop } from './processes';
import { ratioIs, type Row } from './report';
import { cpuMs, median, percentile, pool, rssMiB, timeEach } from './stats';

/** A turn that waits: its one tool call sleeps ten minutes (reporting progress every 400 ms, docs/design.md §11) or waits for a person's approval (nothing to do meanwhile). */
const IDLE = { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 600_000 } } }] };
export type Waiting = 'sleep' | 'approval';
const START_CONCURRENCY = 64;
const STEER_WARMUP = 300;
const STEER_SAMPLES = 600;

export interface ScalePoint {
  waiting: Waiting;
  turns: number;
  rssMiB: number;
  /** CPU the engine spends per second while its turns wait (user + system, % of one core). */
  idleCpuPercent: number;
  startSeconds: number;
  startsPerSecond: number;
  acceptP50: number;
  acceptP99: number;
}

/**
 * One engine process (dist/) holding 1k, then 10k, then 100k running idle
 * turns. Turns are started through the engine's NATS command subjects (create
 * a conversation, start a turn), 64 at a time — what the gateway forwards, without
 * an HTTP hop per turn, so 100 000 starts take a minute or two. At each size:
 * the engine's resident set, the CPU its waiting turns cost, and the steer
 * accept latency the engine answers with (a sequential NATS request on a
 * turn's steer subject until its receipt: the engine's share of a steer).
 */
export async function measureEngineScale(opts: { natsUrl: string; prefix: string; nc: NatsConnection; sizes: number[]; waiting: Waiting; log?: (m: string) => void }): Promise<ScalePoint[]> {
  const prefix = `${opts.prefix}${opts.waiting === 'sleep' ? 's' : 'w'}`;
  const s = subjects(prefix);
  const { child } = await spawnApp('engine', { NATS_URL: opts.natsUrl, STEERLINE_PREFIX: prefix });
  const approvals = opts.waiting === 'approval' ? { approvals: { tools: ['sleep'] } } : {};
  // BENCH_ENGINE_LOG=<file>: the engine's log lines, to find out why a figure looks wrong.
  if (process.env.BENCH_ENGINE_LOG) {
    const file = createWriteStream(process.env.BENCH_ENGINE_LOG);
    child.stdout!.pipe(file);
    child.stderr!.pipe(file);
  }
  const call = <T>(subject: string, body: unknown) => request<T>(opts.nc, subject, body, { timeoutMs: 60_000, noResponders: 'unavailable' });
  const turns: string[] = [];
  const out: ScalePoint[] = [];
  try {
    for (const size of opts.sizes) {
      const t0 = performance.now();
      const started = await pool(
        Array.from({ length: size - turns.length }, () => async () => {
          const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
          const { turnId } = await call<{ turnId: string }>(s.startTurn, { tenantId: 'default', conversationId: id, prompt: 'idle', model: IDLE, limits: { maxQueued: 1000 }, ...approvals });
          return turnId;
        }),
        START_CONCURRENCY,
      );
      const startSeconds = (performance.now() - t0) / 1000;
      turns.push(...started);
      opts.log?.(`${turns.length} idle turns (${opts.waiting}) started in ${startSeconds.toFixed(1)} s`);
      // Settled: the last starts' model calls and tool calls are under way.
      await new Promise((r) => setTimeout(r, 3000));
      const idleCpuPercent = await cpuPercent(child.pid!, 3000);
      const rss = rssMiB(child.pid!);
      // Steers spread over turns across the whole population, a few per turn.
      const targets = Array.from({ length: 300 }, (_, i) => turns[Math.floor((i * turns.length) / 300)]);
      const steer = (i: number) => call(s.turnSteer(targets[i % targets.length]), { tenantId: 'default', text: `steer ${i}` });
      await timeEach(STEER_WARMUP, steer);
      const samples = await timeEach(STEER_SAMPLES, (i) => steer(i + STEER_WARMUP));
      out.push({ waiting: opts.waiting, turns: turns.length, rssMiB: rss, idleCpuPercent, startSeconds, startsPerSecond: started.length / startSeconds, acceptP50: median(samples), acceptP99: percentile(samples, 99) });
      opts.log?.(`at ${turns.length}: ${JSON.stringify(out[out.length - 1])}`);
    }
  } finally {
    await stop(child);
    await deleteStreams(opts.nc, prefix);
  }
  return out;
}

/** CPU time a process used over `ms`, as a percentage of one core (from /proc). */
async function cpuPercent(pid: number, ms: number): Promise<number> {
  const before = cpuMs(pid);
  await new Promise((r) => setTimeout(r, ms));
  return ((cpuMs(pid) - before) / ms) * 100;
}

const WAITING: Record<Waiting, string> = { sleep: 'each in a 10-minute sleep', approval: 'each waiting for an approval' };

/** The curve as bench rows: RSS (100k under 2 GiB), the engine's steer accept p50 (not growing with live turns), idle CPU, starts. */
export function engineScaleRows(points: ScalePoint[], subscriptionBytes: number): Row[] {
  const perSubscription: Row = { group: 'memory', name: 'NATS client heap per command subscription (a running turn holds 2)', value: subscriptionBytes, unit: 'B' };
  return [perSubscription, ...points.flatMap((p): Row[] => {
    const base = points.find((q) => q.waiting === p.waiting)!;
    return [
    { group: 'memory', name: `engine RSS with ${p.turns} running idle turns (${WAITING[p.waiting]})`, value: p.rssMiB, unit: 'MiB', target: p.turns >= 100_000 ? '< 2048 MiB' : undefined },
    {
      group: 'steerline',
      name: `steer accept at the engine (NATS request → receipt) with ${p.turns} live turns (${p.waiting}), p50`,
      value: p.acceptP50,
      unit: 'ms',
      ...(p === base ? {} : { floor: base.acceptP50, floorName: `p50 with ${base.turns}`, target: ratioIs('≤', 1.5, 'no growth (≤ 1.5×)') }),
    },
    { group: 'steerline', name: `steer accept at the engine with ${p.turns} live turns (${p.waiting}), p99`, value: p.acceptP99, unit: 'ms' },
    { group: 'memory', name: `engine CPU while ${p.turns} turns wait (${p.waiting}; % of one core)`, value: p.idleCpuPercent, unit: '%' },
    { group: 'memory', name: `turn starts per second over NATS, to ${p.turns} (${p.waiting}; ${p.startSeconds.toFixed(0)} s)`, value: p.startsPerSecond, unit: 'turns/s' },
    ];
  })];
}

/**
 * What one per-turn command subscription costs the NATS client (heap bytes,
 * with one callback shared by all, as the engine subscribes): what replacing
 * an engine's two subscriptions per turn with two wildcards would save.
 * Measured in this process (run with --expose-gc).
 */
export async function subscriptionBytes(nc: NatsConnection, prefix: string, count = 20_000): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return NaN;
  const shared = () => undefined;
  gc();
  const before = process.memoryUsage().heapUsed;
  const subs = Array.from({ length: count }, (_, i) => nc.subscribe(`${prefix}.cmd.turn.bench-${i}.*`, { callback: shared }));
  await nc.flush();
  gc();
  const bytes = (process.memoryUsage().heapUsed - before) / count;
  for (const sub of subs) sub.unsubscribe();
  await nc.flush();
  return bytes;
}

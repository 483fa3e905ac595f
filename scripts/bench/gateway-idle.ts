import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { connectNats } from '@steerline/runtime';
import { spawnApp, stop, tearDown } from './processes';
import { measureRateLimit, rateLimitRows } from './rate-limit';
import { renderReport, type Row } from './report';
import { idleTurn, steer } from './steerline';
import { cpuMs, median, pool } from './stats';

/** Steers per second the serving gateway is driven at, in turn; the idle gateway's CPU is read at each. */
const RATES = [0, 250, 500];
const WINDOW_MS = 3_000;
const WINDOWS = 3;
/** Clients steering at once (four per turn), each paced to its share of the rate. */
const CLIENTS = 128;
export interface IdleGatewayFigures {
  /** Per rate: steers/s achieved on the serving gateway, and CPU ms per second of each idle gateway. */
  steps: Array<{ rate: number; achieved: number; idle: Record<string, number>; serving: number }>;
}

/**
 * Gateway CPU while another gateway serves steers: a gateway that serves
 * nothing (no request, no watcher) should do nothing, however busy the log.
 * `idleGateways` names the gateway builds to measure side by side (this one,
 * and e.g. an older dist with BENCH_BASELINE_DIST), sampled in the same windows.
 */
export async function measureIdleGateway(opts: { env: Record<string, string>; servingUrl: string; servingPid: number; baselineDist?: string; log: (m: string) => void }): Promise<IdleGatewayFigures> {
  const idle: Array<{ name: string; child: ChildProcess }> = [];
  try {
    idle.push({ name: 'this build', child: (await spawnApp('gateway', opts.env)).child });
    if (opts.baselineDist) idle.push({ name: 'baseline', child: (await spawnApp('gateway', opts.env, join(opts.baselineDist, 'apps/gateway/src/main.js'))).child });
    const api = `${opts.servingUrl}/v1`;
    const turns = await pool(Array.from({ length: CLIENTS / 4 }, () => () => idleTurn(api)), 8);
    await pastStartUp(idle.map((g) => g.child.pid!));
    const steps: IdleGatewayFigures['steps'] = [];
    const load = { n: 0 };
    for (const rate of RATES) {
      opts.log(`idle gateway: serving gateway at ${rate} steers/s`);
      // The median of a few windows: one window may hold a garbage collection that has nothing to do with the traffic.
      const windows: Array<{ achieved: number; idle: number[]; serving: number }> = [];
      for (let w = 0; w < WINDOWS; w++) {
        const before = idle.map((g) => cpuMs(g.child.pid!));
        const servingBefore = cpuMs(opts.servingPid);
        const t0 = performance.now();
        const sent = await steerAt(api, turns, rate, load);
        const seconds = (performance.now() - t0) / 1000;
        windows.push({ achieved: sent / seconds, idle: idle.map((g, i) => (cpuMs(g.child.pid!) - before[i]) / seconds), serving: (cpuMs(opts.servingPid) - servingBefore) / seconds });
      }
      steps.push({
        rate,
        achieved: median(windows.map((x) => x.achieved)),
        idle: Object.fromEntries(idle.map((g, i) => [g.name, median(windows.map((x) => x.idle[i]))])),
        serving: median(windows.map((x) => x.serving)),
      });
    }
    await pool(turns.map((tid) => () => fetch(`${api}/turns/${tid}/cancel`, { method: 'POST' })), 8);
    return { steps };
  } finally {
    for (const g of idle) await stop(g.child);
  }
}

/**
 * Waits until the idle gateways' start-up work is done before the first window: the JIT, the first
 * connections, and V8's memory reducer, which collects the start-up garbage with a full GC some 10–20 s
 * after the process starts (a profile: 120 ms of garbage collection on the main thread at 16 s, and
 * 23–33 ms/s in the window it landed in, the 250 steers/s one, in two full runs). So: that burst
 * seen (or 30 s gone by), then 2 s with no more than a tick of CPU in any half second.
 */
async function pastStartUp(pids: number[]): Promise<void> {
  const started = performance.now();
  let last = pids.map((pid) => cpuMs(pid));
  let burst = false;
  let quietSince = performance.now();
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    const now = pids.map((pid) => cpuMs(pid));
    const most = Math.max(...now.map((ms, i) => ms - last[i]));
    last = now;
    if (most >= 50) burst = true;
    if (most > 10) quietSince = performance.now();
    const waited = performance.now() - started;
    if ((burst || waited > 30_000) && performance.now() - quietSince >= 2_000) return;
    if (waited > 60_000) return;
  }
}

/** `rate` steers per second for one window, from CLIENTS clients each paced to its share; returns how many were answered. */
async function steerAt(api: string, turns: string[], rate: number, load: { n: number }): Promise<number> {
  const t0 = performance.now();
  let sent = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      if (rate === 0) return new Promise((r) => setTimeout(r, WINDOW_MS));
      const tid = turns[c % turns.length];
      const every = (1000 * CLIENTS) / rate;
      for (let k = 0; ; k++) {
        const due = t0 + (c * every) / CLIENTS + k * every;
        if (due > t0 + WINDOW_MS) return;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        await steer(api, tid, load.n++);
        sent++;
      }
    }),
  );
  return sent;
}

/** ≈ 0: at most this much CPU per second (a timer tick or two), and no more at 500 steers/s than at none. */
const IDLE_CPU_TARGET_MS = 5;

export function idleGatewayRows(f: IdleGatewayFigures): Row[] {
  const rows: Row[] = [];
  const quiet = f.steps[0];
  for (const step of f.steps) {
    for (const [name, cpu] of Object.entries(step.idle)) {
      const growth = cpu - quiet.idle[name];
      rows.push({
        group: 'steerline',
        name: `idle gateway (${name}) CPU while another serves ${step.achieved.toFixed(0)} steers/s (asked ${step.rate}/s; the serving one uses ${step.serving.toFixed(0)} ms/s)`,
        value: cpu,
        unit: 'ms CPU/s',
        target:
          name === 'this build' && step.rate > 0
            ? { text: `≈ 0, not growing (≤ ${IDLE_CPU_TARGET_MS} ms/s)`, met: (v) => v <= IDLE_CPU_TARGET_MS && growth <= IDLE_CPU_TARGET_MS / 2 }
            : undefined,
      });
    }
  }
  return rows;
}

/** `BENCH_ONLY=gateway-idle npm run bench`: only these figures and the rate limit's, on services of their own, in a block of their own. */
export async function gatewayIdleOnly(opts: { natsUrl: string; pgServer: string; machine: string }): Promise<void> {
  const prefix = `bench${randomBytes(4).toString('hex')}`;
  const database = `steerline_${prefix}`;
  const env = { NATS_URL: opts.natsUrl, STEERLINE_PREFIX: prefix, DATABASE_URL: `${opts.pgServer}/${database}`, PORT: '0', STEERLINE_RATE_LIMIT: '0' };
  const log = (m: string) => process.stderr.write(`bench: ${m}\n`);
  const nc = await connectNats(opts.natsUrl, 'bench');
  const children: ChildProcess[] = [];
  try {
    children.push((await spawnApp('persistence', env)).child);
    children.push((await spawnApp('engine', env)).child);
    const serving = await spawnApp('gateway', env);
    children.push(serving.child);
    const figures = await measureIdleGateway({ env, servingUrl: String(serving.ready.url), servingPid: serving.child.pid!, baselineDist: process.env.BENCH_BASELINE_DIST, log });
    log('what the shared rate limit adds to a request');
    const limits = rateLimitRows(await measureRateLimit({ env, nc, prefix }));
    const report = renderReport([...idleGatewayRows(figures), ...limits], opts.machine, 'bench-gateway-idle');
    console.log(report.table);
    if (process.env.BENCH_WRITE !== '0') await report.write(join(__dirname, '../../../docs/performance.md'));
  } finally {
    await tearDown({ children, nc, prefix, pgServer: opts.pgServer, database });
    await nc.close();
  }
}

/**
 * Driving the load client (load-client.ts, a process of its own) and reading, around each of its
 * blocks, the CPU time every server on the path spent (/proc/<pid>/stat), for a CPU budget per
 * request; the client reports its own for the block, to show it was not the bottleneck.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadResult, LoadSpec } from './load-client';
import { cpuMs, median, percentile } from './stats';

/** A phase's client may use at most this share of one core, or its figures are the client's. */
export const CLIENT_CORE_LIMIT = 0.5;

export interface LoadClient {
  pid: number;
  /** One block; throws when a request failed. `clientMs`: the client's CPU time over it (as it measured it). */
  run(spec: LoadSpec): Promise<LoadResult & { clientMs: number }>;
  close(): Promise<void>;
}

export async function startLoadClient(): Promise<LoadClient> {
  const exitWithParent = join(__dirname, '../../../scripts/lib/exit-with-parent.cjs');
  const child: ChildProcess = fork(join(__dirname, 'load-client.js'), [], { execArgv: ['--require', exitWithParent], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<number, (r: LoadResult) => void>();
  let ids = 0;
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the load client exited (${code})`)));
    child.on('message', (m: { ready?: boolean; id?: number; result?: LoadResult }) => {
      if (m.ready) return resolve();
      waiting.get(m.id!)?.(m.result!);
      waiting.delete(m.id!);
    });
  });
  const pid = child.pid!;
  return {
    pid,
    async run(spec) {
      const id = ids++;
      const result = await new Promise<LoadResult>((resolve) => {
        waiting.set(id, resolve);
        child.send({ id, spec });
      });
      const clientMs = result.cpuMs;
      if (result.errors) throw new Error(`${result.errors} of ${result.latencies.length} requests failed: ${result.firstError}`);
      return { ...result, clientMs };
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Processes whose CPU a phase reads: a name and how to find its pids at that moment. */
export type Processes = Record<string, () => number[] | Promise<number[]>>;

export interface Way {
  spec: Omit<LoadSpec, 'clients' | 'each'>;
  /** Whose CPU to read around each block, besides the client's. */
  processes?: Processes;
  /** Awaited after each block before the CPU is read again: work the block left behind (e.g. the read side catching up). */
  settle?: () => Promise<void>;
  /** Counters read before each block and after it settled (e.g. events appended): `counted` holds their growth over the blocks. */
  count?: () => Promise<Record<string, number>>;
}

export interface Phase {
  p50: number;
  p99: number;
  perSecond: number;
  requests: number;
  /** The client's CPU over its blocks as a share of one core (CPU ms / wall ms). */
  clientCores: number;
  /** CPU ms per 1 000 requests of each process of `processes`, and `client`. */
  cpuPer1000: Record<string, number>;
  counted: Record<string, number>;
}

/**
 * Each of `ways` in `rounds` alternating blocks of `clients` concurrent clients making `each`
 * requests in a row, so drift in the machine's load hits them alike.
 */
export async function interleavedLoad(client: LoadClient, ways: Record<string, Way>, rounds: number, clients: number, each: number): Promise<Record<string, Phase>> {
  const acc = Object.fromEntries(Object.keys(ways).map((k) => [k, { latencies: [] as number[], ms: 0, clientMs: 0, cpu: {} as Record<string, number>, counted: {} as Record<string, number> }]));
  for (let r = 0; r < rounds; r++) {
    for (const [name, way] of Object.entries(ways)) {
      const a = acc[name];
      // Counted first: reading them (e.g. a metrics scrape) is the bench's work, not the block's.
      const countBefore = await way.count?.();
      const before = await readAll(way.processes ?? {});
      const result = await client.run({ ...way.spec, clients, each });
      await way.settle?.();
      const after = await readAll(way.processes ?? {});
      if (way.count) for (const [c, n] of Object.entries(await way.count())) a.counted[c] = (a.counted[c] ?? 0) + n - (countBefore![c] ?? 0);
      for (const p of Object.keys(after)) a.cpu[p] = (a.cpu[p] ?? 0) + spent(before[p], after[p]);
      a.latencies.push(...result.latencies);
      a.ms += result.ms;
      a.clientMs += result.clientMs;
    }
  }
  return Object.fromEntries(
    Object.entries(acc).map(([k, a]) => {
      const requests = a.latencies.length;
      const cpuPer1000 = Object.fromEntries([...Object.entries(a.cpu), ['client', a.clientMs] as const].map(([p, ms]) => [p, (ms * 1000) / requests]));
      const phase: Phase = { p50: median(a.latencies), p99: percentile(a.latencies, 99), perSecond: requests / (a.ms / 1000), requests, clientCores: a.clientMs / a.ms, cpuPer1000, counted: a.counted };
      return [k, phase];
    }),
  );
}

type Reading = Map<number, number>;

async function readAll(processes: Processes): Promise<Record<string, Reading>> {
  const out: Record<string, Reading> = {};
  for (const [name, pids] of Object.entries(processes)) out[name] = new Map((await pids()).map((pid) => [pid, cpuMs(pid)]));
  return out;
}

/** CPU ms spent between two readings: a process born in between counts from zero, one gone is left out. */
function spent(before: Reading, after: Reading): number {
  let ms = 0;
  for (const [pid, now] of after) if (Number.isFinite(now)) ms += now - (before.get(pid) ?? 0);
  return ms;
}

/** The process listening on a local TCP port (e.g. nats-server at NATS_URL's), from /proc/net/tcp and the fds in /proc. */
export function listenerPid(port: number): number | undefined {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is ADDR:PORT; state 0A is LISTEN; field 9 is the socket's inode.
      if (f[1]?.endsWith(`:${hex}`) && f[3] === '0A') inodes.add(`socket:[${f[9]}]`);
    }
  }
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) if (inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`))) return Number(pid);
    } catch {
      // A process that ended meanwhile, or one this user may not look into.
    }
  }
  return undefined;
}

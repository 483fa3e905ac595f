/** Small statistics for the benchmark: medians and tails of latency samples. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const median = (samples: number[]) => percentile(samples, 50);

/** Times `fn` `n` times in a row; returns each duration in ms. */
export async function timeEach(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    out.push(performance.now() - t0);
  }
  return out;
}

/** Runs `tasks` with at most `limit` in flight. */
export async function pool<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        out[i] = await tasks[i]();
      }
    }),
  );
  return out;
}

/**
 * `clients` concurrent clients, each calling `fn` `each` times in a row:
 * every call's latency (ms) and the calls completed per second overall.
 */
export async function concurrently(clients: number, each: number, fn: (client: number, i: number) => Promise<unknown>) {
  const latencies: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; i < each; i++) {
        const s = performance.now();
        await fn(c, i);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const perSecond = latencies.length / ((performance.now() - t0) / 1000);
  return { p50: median(latencies), p99: percentile(latencies, 99), perSecond };
}

export function rssMiB(pid: number): number {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const status: string = require('node:fs').readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** Small statistics for the benchmark: medians and tails of latency samples. */
import { readdirSync, readFileSync } from 'node:fs';

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

export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

// Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks.
const TICKS_PER_SECOND = 100;

/** Whether this kernel keeps each thread's run time (`schedstat`); a kernel built without it reads 0. */
export const SCHEDSTAT = (() => {
  try {
    return Number(readFileSync(`/proc/${process.pid}/schedstat`, 'utf8').split(' ', 1)[0]) > 0;
  } catch {
    return false;
  }
})();

/**
 * CPU time (user + system) the process has used so far, in ms; NaN without a pid. Each thread's
 * run time in ns (`/proc/<pid>/task/<tid>/schedstat`), summed: `/proc/<pid>/stat` counts 10 ms
 * ticks, and a 64-client block of 1 280 requests lasts ~70 ms on a fast host, so a process's
 * share of a block was a tick or two either way. A thread that ended is not in the sum, but
 * Node's and nats-server's threads live as long as their process. Without schedstat, the ticks.
 */
export function cpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  if (SCHEDSTAT) {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
      } catch {
        // The thread ended between the listing and the read: its time is gone from the sum either way.
      }
    }
    return ns / 1e6;
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), from field 3 on: utime is field 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

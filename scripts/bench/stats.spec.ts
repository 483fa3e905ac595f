import { SCHEDSTAT, cpuMs } from './stats';

/** Spins until this process has used `ms` more of CPU (by its own count, whatever the machine's load). */
function spin(ms: number): void {
  const from = process.cpuUsage();
  let x = 0;
  for (;;) {
    for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + i);
    const used = process.cpuUsage(from);
    if ((used.user + used.system) / 1000 >= ms) break;
  }
  if (Number.isNaN(x)) throw new Error('unreachable');
}

describe('a process’s CPU time, as the bench reads it', () => {
  it('follows the CPU the process used to within a few ms, as process.cpuUsage does (not in 10 ms ticks)', () => {
    // Without schedstat the bench counts /proc's 10 ms ticks: a reading is then up to a tick off each end.
    const tolerance = SCHEDSTAT ? 3 : 25;
    for (const ms of [17, 43, 71]) {
      const usage0 = process.cpuUsage();
      const read0 = cpuMs(process.pid);
      spin(ms);
      const read = cpuMs(process.pid) - read0;
      const usage = process.cpuUsage(usage0);
      const used = (usage.user + usage.system) / 1000;
      expect(used).toBeGreaterThanOrEqual(ms);
      expect(Math.abs(read - used)).toBeLessThan(tolerance);
    }
  });

  it('is NaN for a process it was not given', () => {
    expect(cpuMs(undefined)).toBeNaN();
  });
});

import { eventually } from '../../../../test/support/env';
import { SleepClock } from './sleep.clock';

describe('the clock every sleep reports its progress on', () => {
  // The timing tests run on Jest's clock (Date.now too): a busy machine firing real timers late would only measure itself.
  afterEach(() => jest.useRealTimers());

  it('reports a sleep at its start, at least every 400 ms while it runs, and complete at its end', async () => {
    jest.useFakeTimers();
    const clock = new SleepClock(400, 50);
    const reports: { at: number; progress?: number }[] = [];
    const t0 = Date.now();
    const sleeping = clock.sleep(1300, new AbortController().signal, (u) => reports.push({ at: Date.now() - t0, progress: u.progress }));
    await jest.advanceTimersByTimeAsync(1300);
    await sleeping;
    expect(Date.now() - t0).toBe(1300);
    expect(reports[0].progress).toBe(0);
    expect(reports.at(-1)!.progress).toBe(1);
    expect(reports.length).toBeGreaterThanOrEqual(4);
    const gaps = reports.slice(1).map((r, i) => r.at - reports[i].at);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(400);
    expect(reports.map((r) => r.progress)).toEqual([...reports.map((r) => r.progress!)].sort((a, b) => a - b));
    expect(clock.size).toBe(0);
  });

  it('reports all sleeps due on one tick together, one clock for many sleeps', async () => {
    jest.useFakeTimers();
    const clock = new SleepClock(400, 50);
    const counts = Array.from({ length: 200 }, () => 0);
    const sleeps = counts.map((_, i) => clock.sleep(900, new AbortController().signal, () => counts[i]++));
    expect(clock.size).toBe(200);
    await jest.advanceTimersByTimeAsync(900);
    await Promise.all(sleeps);
    // Start, two or three ticks, end; the same for all, as they were started together.
    for (const n of counts) expect(n).toBeGreaterThanOrEqual(3);
    expect(new Set(counts).size).toBe(1);
    expect(clock.size).toBe(0);
  });

  it('stops a sleep as soon as its signal aborts, and forgets it', async () => {
    const clock = new SleepClock(400, 50);
    const abort = new AbortController();
    const t0 = Date.now();
    const sleeping = clock.sleep(600_000, abort.signal, () => undefined);
    await eventually(() => clock.size === 1, 5000, 'the sleep on the clock');
    abort.abort(new Error('cancelled'));
    await expect(sleeping).rejects.toThrow('cancelled');
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(clock.size).toBe(0);
  });

  it('refuses to start under an aborted signal', async () => {
    const abort = new AbortController();
    abort.abort(new Error('gone'));
    await expect(new SleepClock().sleep(10, abort.signal)).rejects.toThrow('gone');
  });
});

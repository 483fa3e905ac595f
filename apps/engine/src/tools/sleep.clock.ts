import type { ToolProgressUpdate } from './tool.registry';

interface Sleeper {
  started: number;
  ms: number;
  lastReport: number;
  progress?: (update: ToolProgressUpdate) => void;
}

/**
 * The built-in `sleep`'s progress (docs/design.md §11: at its start and at
 * least every `reportEveryMs`), reported by one clock for every running
 * sleep. A timer per sleep and slice made each report its own event-loop turn
 * and its own socket write: an engine with 100 000 sleeping turns spent its
 * CPU in syscalls. One tick reports every sleep that is due, so the reports of
 * a tick leave in one write; each sleep still ends on its own timer, on time.
 */
export class SleepClock {
  private readonly sleepers = new Set<Sleeper>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly reportEveryMs = 400,
    private readonly tickMs = 50,
  ) {}

  /** How many sleeps are running (for tests). */
  get size(): number {
    return this.sleepers.size;
  }

  /** Waits `ms` reporting progress, or rejects as soon as `signal` aborts. */
  sleep(ms: number, signal: AbortSignal, progress?: (update: ToolProgressUpdate) => void): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const started = Date.now();
    const sleeper: Sleeper = { started, ms, lastReport: started, progress };
    progress?.({ progress: 0, message: `0 of ${ms} ms` });
    return new Promise((resolve, reject) => {
      const done = () => {
        this.remove(sleeper);
        signal.removeEventListener('abort', onAbort);
        progress?.({ progress: 1, message: `${ms} of ${ms} ms` });
        resolve();
      };
      const timer = setTimeout(done, ms);
      const onAbort = () => {
        clearTimeout(timer);
        this.remove(sleeper);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      if (progress) this.add(sleeper);
    });
  }

  private add(sleeper: Sleeper): void {
    this.sleepers.add(sleeper);
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.tickMs);
    this.timer.unref();
  }

  private remove(sleeper: Sleeper): void {
    this.sleepers.delete(sleeper);
    if (this.sleepers.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Reports each sleep whose next report would otherwise come later than `reportEveryMs` after its last. */
  private tick(): void {
    const now = Date.now();
    for (const s of this.sleepers) {
      if (now + this.tickMs - s.lastReport <= this.reportEveryMs) continue;
      s.lastReport = now;
      const slept = Math.min(s.ms, now - s.started);
      s.progress!({ progress: slept / s.ms, message: `${slept} of ${s.ms} ms` });
    }
  }
}

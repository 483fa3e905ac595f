interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** Callers waiting for the checkpoint to reach a stream sequence. */
export class CheckpointWaiters {
  private readonly waiting = new Set<Waiter>();
  private current = 0;

  get position(): number {
    return this.current;
  }

  get pending(): number {
    return this.waiting.size;
  }

  advance(seq: number): void {
    this.current = seq;
    for (const w of this.waiting) if (w.seq <= seq) this.settle(w).resolve();
  }

  waitFor(seq: number, timeoutMs: number): Promise<void> {
    if (seq <= this.current) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        seq,
        resolve,
        reject,
        timer: setTimeout(() => this.settle(waiter).reject(new Error(`checkpoint ${this.current} did not reach ${seq} within ${timeoutMs} ms`)), timeoutMs),
      };
      this.waiting.add(waiter);
    });
  }

  rejectAll(err: Error): void {
    for (const w of this.waiting) this.settle(w).reject(err);
  }

  private settle(w: Waiter): Waiter {
    clearTimeout(w.timer);
    this.waiting.delete(w);
    return w;
  }
}

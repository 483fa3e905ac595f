// Entries remembered at once; the oldest are forgotten first (a steer never
// settled here, a request whose turn moved away), so memory stays bounded.
const REMEMBERED = 50_000;

/** Values by key until taken: start times for latencies measured between two events. */
export class Remembered<V> {
  private readonly entries = new Map<string, V>();
  /** How many are forgotten at once when full: a twentieth. */
  private readonly evictBatch: number;

  constructor(private readonly limit = REMEMBERED) {
    this.evictBatch = Math.max(1, Math.floor(limit / 20));
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.limit) this.forgetOldest();
  }

  /** The value, forgotten once read; undefined when it was not seen here. */
  take(key: string): V | undefined {
    const value = this.entries.get(key);
    this.entries.delete(key);
    return value;
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Forgets the oldest entries, a batch at a time. A Map's iteration starts by stepping over the
   * slots of the entries deleted before it (until the table is rebuilt), so forgetting one entry
   * per `set` made every `set` of a full map walk thousands of them: 21 µs against 0.3 µs each,
   * on the engine's steer and model-request path (issue 34). A batch pays that walk once.
   */
  private forgetOldest(): void {
    let n = this.entries.size - this.limit + this.evictBatch;
    for (const key of this.entries.keys()) {
      if (n-- <= 0) break;
      this.entries.delete(key);
    }
  }
}

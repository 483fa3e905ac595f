// Entries remembered at once; the oldest are forgotten first (a steer never
// settled here, a request whose turn moved away), so memory stays bounded.
const REMEMBERED = 50_000;

/** Values by key until taken: start times for latencies measured between two events. */
export class Remembered<V> {
  private readonly entries = new Map<string, V>();

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > REMEMBERED) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** The value, forgotten once read; undefined when it was not seen here. */
  take(key: string): V | undefined {
    const value = this.entries.get(key);
    this.entries.delete(key);
    return value;
  }
}

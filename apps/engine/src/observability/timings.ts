// Starts remembered at once; the oldest are forgotten first (a steer never
// settled here, a request whose turn moved away), so memory stays bounded.
const REMEMBERED = 100_000;

/** Start times (and small notes) by key, for latencies measured between two events. */
export class Timings {
  private readonly started = new Map<string, number | string>();

  start(key: string, at: number): void {
    this.remember(key, at);
  }

  /** The start time, forgotten once read; undefined when it was not seen here. */
  stop(key: string): number | undefined {
    const at = this.started.get(key);
    this.started.delete(key);
    return typeof at === 'number' ? at : undefined;
  }

  note(key: string, value: string): void {
    this.remember(key, value);
  }

  recall(key: string): string | undefined {
    const value = this.started.get(key);
    this.started.delete(key);
    return typeof value === 'string' ? value : undefined;
  }

  get size(): number {
    return this.started.size;
  }

  private remember(key: string, value: number | string): void {
    this.started.delete(key);
    this.started.set(key, value);
    if (this.started.size > REMEMBERED) this.started.delete(this.started.keys().next().value as string);
  }
}

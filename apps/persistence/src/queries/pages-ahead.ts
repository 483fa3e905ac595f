/**
 * Conversation pages read ahead (docs/design.md §14): having answered a page asked of this
 * instance, persistence starts reading the next one at once, while the answer crosses NATS and the
 * gateway writes it, and answers the read's next request from it. At most `max` pages wait, each for
 * at most `ttlMs` (a reader that stopped, or went elsewhere, leaves nothing behind for longer); a
 * page is taken once. Each is still one snapshot of its own, taken after the page before it.
 */
export class PagesAhead<T> {
  private readonly pages = new Map<string, { page: Promise<T>; timer: NodeJS.Timeout }>();

  constructor(
    readonly max = 16,
    readonly ttlMs = 2_000,
  ) {}

  get size(): number {
    return this.pages.size;
  }

  /** The page read ahead for `key`, if one waits; it no longer does. */
  take(key: string): Promise<T> | undefined {
    const ahead = this.pages.get(key);
    if (!ahead) return undefined;
    clearTimeout(ahead.timer);
    this.pages.delete(key);
    return ahead.page;
  }

  /** Starts `read` for `key`, unless one waits for it already or `max` do. A failed read is not reported here: whoever takes it reads again. */
  put(key: string, read: () => Promise<T>): void {
    if (this.pages.has(key) || this.pages.size >= this.max) return;
    const page = read();
    page.catch(() => undefined);
    const timer = setTimeout(() => this.pages.delete(key), this.ttlMs);
    timer.unref();
    this.pages.set(key, { page, timer });
  }

  clear(): void {
    for (const { timer } of this.pages.values()) clearTimeout(timer);
    this.pages.clear();
  }
}

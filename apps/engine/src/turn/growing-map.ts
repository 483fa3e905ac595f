/**
 * An immutable map whose `set` does not copy: every version of it is a prefix of
 * one shared log of writes. `set` on the newest version appends to the log (O(1));
 * on an older one (a state kept after a newer one was made from it, e.g. a decision
 * whose append failed) it first copies that version's prefix into a log of its own,
 * so no version ever sees a write made after it. Reads see, per key, the last write
 * within the version's prefix; iteration is in first-insertion order, like a Map.
 *
 * Why: a turn's `evolve` ran `new Map(steers).set(...)` for every steer event, so a
 * turn's n steers cost O(n²) copies (issue 34: 10 % of the engine's samples at ~60
 * steers per turn).
 */
interface Log<K, V> {
  keys: K[];
  values: V[];
  /** Per key, the log positions of its writes, ascending. */
  writes: Map<K, number[]>;
}

export class GrowingMap<K, V> implements ReadonlyMap<K, V> {
  private constructor(
    private readonly log: Log<K, V>,
    private readonly length: number,
    readonly size: number,
  ) {}

  static empty<K, V>(): GrowingMap<K, V> {
    return new GrowingMap<K, V>({ keys: [], values: [], writes: new Map() }, 0, 0);
  }

  static of<K, V>(entries: Iterable<readonly [K, V]>): GrowingMap<K, V> {
    let map = GrowingMap.empty<K, V>();
    for (const [k, v] of entries) map = map.set(k, v);
    return map;
  }

  /** A new version with `key` set to `value`; this one is unchanged. */
  set(key: K, value: V): GrowingMap<K, V> {
    const log = this.length === this.log.keys.length ? this.log : this.ownLog();
    const grows = !this.has(key);
    log.keys.push(key);
    log.values.push(value);
    const writes = log.writes.get(key);
    if (writes) writes.push(this.length);
    else log.writes.set(key, [this.length]);
    return new GrowingMap(log, this.length + 1, this.size + (grows ? 1 : 0));
  }

  get(key: K): V | undefined {
    const at = this.lastWrite(key);
    return at === undefined ? undefined : this.log.values[at];
  }

  has(key: K): boolean {
    return this.lastWrite(key) !== undefined;
  }

  *entries(): MapIterator<[K, V]> {
    for (let i = 0; i < this.length; i++) {
      const key = this.log.keys[i];
      // A key is listed where it was first written, with its last value.
      if (this.log.writes.get(key)![0] === i) yield [key, this.get(key)!];
    }
  }

  *keys(): MapIterator<K> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) callback.call(thisArg, v, k, this);
  }

  private lastWrite(key: K): number | undefined {
    const writes = this.log.writes.get(key);
    if (!writes) return undefined;
    // Writes past this version's prefix belong to newer versions: usually none, or a few.
    for (let i = writes.length - 1; i >= 0; i--) if (writes[i] < this.length) return writes[i];
    return undefined;
  }

  /** This version's prefix as a log of its own (a branch off an older version). */
  private ownLog(): Log<K, V> {
    const log: Log<K, V> = { keys: this.log.keys.slice(0, this.length), values: this.log.values.slice(0, this.length), writes: new Map() };
    log.keys.forEach((k, i) => {
      const writes = log.writes.get(k);
      if (writes) writes.push(i);
      else log.writes.set(k, [i]);
    });
    return log;
  }
}

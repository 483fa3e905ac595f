/*
 * Partitioned projection: conversations are split over `count` partitions by a
 * stable hash of the conversation id in the event's subject
 * (`<prefix>.evt.<tenant>.<conversation>`), so a partition tells its own events
 * from the others' without decoding a payload. Every partition reads the whole
 * stream (NATS 2.9 gives a consumer one filter subject, and the subjects stay as
 * they are), applies only its own conversations, and moves its checkpoint over
 * every sequence it read.
 */

/** FNV-1a, 32 bits: stable across processes, releases and platforms. */
export function stableHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The partition an event belongs to, from its subject alone: the hash of its
 * last token (the conversation id). A malformed subject hashes whole, so exactly
 * one partition owns it and dead-letters it.
 */
export function partitionOf(subject: string, count: number): number {
  if (count <= 1) return 0;
  const parts = subject.split('.');
  const key = parts.length === 4 && parts[1] === 'evt' ? parts[3] : subject;
  return stableHash(key) % count;
}

/**
 * The name of partition `index`'s durable consumer, checkpoint row and lock.
 * One partition keeps the name the projector had before partitions, so an
 * existing deployment's consumer and checkpoint carry on.
 */
export function partitionName(base: string, index: number, count: number): string {
  return count <= 1 ? base : `${base}-${index}of${count}`;
}

export function partitionNames(base: string, count: number): string[] {
  return Array.from({ length: Math.max(1, count) }, (_, i) => partitionName(base, i, count));
}

/** How many partitions one of `members` live instances should hold: all of them are held when each holds its share. */
export function fairShare(count: number, members: number): number {
  return Math.ceil(count / Math.max(1, members));
}

/**
 * What an instance does on one balancing round: give back the partitions above
 * its share (highest first, so the ones it keeps stay put), or try the free ones
 * up to its share (starting at `offset`, so instances starting together
 * do not all reach for partition 0 first).
 */
export function balance(opts: { count: number; members: number; held: readonly number[]; offset?: number }): { release: number[]; tryAcquire: number[] } {
  const share = fairShare(opts.count, opts.members);
  const held = [...opts.held].sort((a, b) => a - b);
  if (held.length > share) return { release: held.slice(share).reverse(), tryAcquire: [] };
  if (held.length === share) return { release: [], tryAcquire: [] };
  const offset = opts.offset ?? 0;
  const others = Array.from({ length: opts.count }, (_, i) => (i + offset) % opts.count).filter((p) => !held.includes(p));
  return { release: [], tryAcquire: others };
}

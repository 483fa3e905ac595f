/*
 * Partitioned projection: conversations are split over `count` partitions by a
 * stable hash of the conversation id in the event's subject
 * (`<prefix>.evt.<tenant>.<conversation>[.<p>]`), so a partition tells its own
 * events from the others' without decoding a payload. When the log's subjects
 * carry a partition token for the same count, each partition's consumer reads
 * only its own subjects (`filteredLayout`); otherwise it reads the whole stream,
 * applies only its own conversations, and moves its checkpoint over every
 * sequence it read.
 */
import { parseEventSubject, stableHash, type Subjects } from '@steerline/contracts';

/**
 * The partition an event belongs to, from its subject alone: the hash of its
 * conversation id (the same as its partition token when the token was written
 * for `count` partitions). A malformed subject hashes whole, so exactly one
 * partition owns it and dead-letters it.
 */
export function partitionOf(subject: string, count: number): number {
  if (count <= 1) return 0;
  return stableHash(parseEventSubject(subject)?.conversationId ?? subject) % count;
}

/**
 * Whether a generation of `count` partitions reads filtered subjects: the engines write
 * `count` partition tokens (`s.subjectPartitions`, the deployment's setting), so partition
 * `i`'s events are exactly those on `s.partitionEvents(i)` — once no event without a token
 * is left after its checkpoint (PartitionLoop checks).
 */
export function filteredLayout(s: Subjects, count: number): boolean {
  return count > 1 && s.subjectPartitions === count;
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

import type { Subjects } from '@steerline/contracts';
import type { NextOnSubject } from './next-on-subject';
import { filteredLayout } from './partitions';

/**
 * The stream sequence up to which every event is applied, from each partition's
 * checkpoint (in partition order) and the stream's last sequence read after them.
 *
 * A partition that reads only its own subjects (a filtered layout) commits its
 * checkpoint at its own events: an idle partition's stays behind while the
 * others' events go by. It still covers every sequence before its next own event,
 * or up to `lastSeq` when it has none. An event written without a partition token
 * after the lowest checkpoint bounds them all (its partition reads it only by
 * following the whole log again, PartitionLoop). One get to the stream's leader per
 * partition behind, asked only about events since the last time (`next`). Other
 * layouts read the whole log: their checkpoints are what they cover.
 */
export async function coveredThrough(next: NextOnSubject, s: Subjects, checkpoints: readonly number[], lastSeq: number): Promise<number> {
  const lowest = Math.min(...checkpoints);
  if (!filteredLayout(s, checkpoints.length) || lowest >= lastSeq) return lowest;
  const bounds = await Promise.all([
    ...checkpoints.map((checkpoint, index) => (checkpoint >= lastSeq ? undefined : next.next(s.partitionEvents(index), checkpoint + 1, lastSeq))),
    next.next(s.unpartitionedEvents, lowest + 1, lastSeq),
  ]);
  const covered = checkpoints.map((checkpoint, index) => (checkpoint >= lastSeq ? checkpoint : bounds[index] === undefined ? lastSeq : bounds[index]! - 1));
  const unpartitioned = bounds[checkpoints.length];
  return Math.min(...covered, unpartitioned === undefined ? lastSeq : unpartitioned - 1);
}

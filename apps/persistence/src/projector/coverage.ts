import type { JetStreamManager, MsgRequest } from '@nats-io/jetstream';
import type { Subjects } from '@steerline/contracts';
import { filteredLayout, partitionOf } from './partitions';

/** Events without a partition token looked at past a partition's checkpoint before coverage stops there (they are another's, but rare). */
const UNPARTITIONED_LOOKS = 16;

/**
 * The stream sequence up to which every event is applied, from each partition's
 * checkpoint (in partition order) and the stream's last sequence read after them.
 *
 * A partition that reads only its own subjects (a filtered layout) commits its
 * checkpoint at its own events: an idle partition's stays behind while the
 * others' events go by. It still covers every sequence before its next own event
 * (on its subjects, or one of its conversations written without a partition
 * token, which it reads only by following again), and up to `lastSeq` when it has
 * none: a get or two to the stream's leader per partition behind. Other layouts
 * read the whole log: their checkpoints are what they cover.
 */
export async function coveredThrough(jsm: JetStreamManager, s: Subjects, checkpoints: readonly number[], lastSeq: number): Promise<number> {
  const count = checkpoints.length;
  if (!filteredLayout(s, count)) return Math.min(...checkpoints);
  const covered = await Promise.all(
    checkpoints.map(async (checkpoint, index) => {
      if (checkpoint >= lastSeq) return checkpoint;
      const next = await Promise.all([nextSeq(jsm, s.stream, checkpoint + 1, s.partitionEvents(index)), nextUnpartitioned(jsm, s, index, count, checkpoint + 1)]);
      const first = Math.min(...next.filter((seq): seq is number => seq !== undefined));
      return Number.isFinite(first) ? Math.min(lastSeq, first - 1) : lastSeq;
    }),
  );
  return Math.min(...covered);
}

async function nextSeq(jsm: JetStreamManager, stream: string, seq: number, subject: string): Promise<number | undefined> {
  return (await jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as MsgRequest))?.seq;
}

/** The first event without a partition token at or after `from` that is partition `index`'s; after a few others, where the looking stopped. */
async function nextUnpartitioned(jsm: JetStreamManager, s: Subjects, index: number, count: number, from: number): Promise<number | undefined> {
  let seq = from;
  for (let looks = 0; looks < UNPARTITIONED_LOOKS; looks++) {
    const found = await jsm.streams.getMessage(s.stream, { seq, next_by_subj: s.unpartitionedEvents } as MsgRequest);
    if (!found) return undefined;
    if (partitionOf(found.subject, count) === index) return found.seq;
    seq = found.seq + 1;
  }
  return seq;
}

import type { JetStreamManager, MsgRequest } from '@nats-io/jetstream';
import type { Subjects } from '@steerline/contracts';
import { filteredLayout } from './partitions';

/**
 * The stream sequence up to which every event is applied, from each partition's
 * checkpoint (in partition order) and the stream's last sequence read after them.
 *
 * A partition that reads only its own subjects (a filtered layout) commits its
 * checkpoint at its own events: an idle partition's stays behind while the
 * others' events go by. It still covers every sequence before its next own event
 * (or an event without a partition token, which it has not read either), and up to
 * `lastSeq` when it has none: one get to the stream's leader per partition behind.
 * Other layouts read the whole log: their checkpoints are what they cover.
 */
export async function coveredThrough(jsm: JetStreamManager, s: Subjects, checkpoints: readonly number[], lastSeq: number): Promise<number> {
  if (!filteredLayout(s, checkpoints.length)) return Math.min(...checkpoints);
  const covered = await Promise.all(
    checkpoints.map(async (checkpoint, index) => {
      if (checkpoint >= lastSeq) return checkpoint;
      const next = await Promise.all([s.partitionEvents(index), s.unpartitionedEvents].map((subject) => nextSeq(jsm, s.stream, checkpoint + 1, subject)));
      const first = Math.min(...next.filter((seq): seq is number => seq !== undefined));
      return Number.isFinite(first) ? Math.min(lastSeq, first - 1) : lastSeq;
    }),
  );
  return Math.min(...covered);
}

async function nextSeq(jsm: JetStreamManager, stream: string, seq: number, subject: string): Promise<number | undefined> {
  return (await jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as MsgRequest))?.seq;
}

/*
 * A batch must continue the log right after the checkpoint. The events stream
 * holds only event subjects and its sequences are contiguous, except where its
 * limits removed messages. So a stream sequence between the checkpoint and a
 * batch's messages that the batch does not hold was either removed (skip it)
 * or lost in flight: a fetch whose messages never arrived (its NATS node died,
 * the consumer's leader changed) still counts them delivered, the next fetch
 * hands out later ones, and acking those (AckPolicy.All) acks the lost ones too.
 */

/** Stream sequences `from`..`to`, both included. */
export interface SeqRange {
  from: number;
  to: number;
}

/**
 * The stream sequences after `checkpoint` and before the batch's last message
 * that the batch does not hold, in order. Sequences at or below the checkpoint
 * (redeliveries) are ignored.
 */
export function missingRanges(checkpoint: number, seqs: readonly number[]): SeqRange[] {
  const ranges: SeqRange[] = [];
  let next = checkpoint + 1;
  for (const seq of [...seqs].sort((a, b) => a - b)) {
    if (seq < next) continue;
    if (seq > next) ranges.push({ from: next, to: seq - 1 });
    next = seq + 1;
  }
  return ranges;
}

/**
 * Where the stream is asked about a range: the sequence of its first message
 * still stored at or after `from`, or undefined when there is none.
 */
export type NextStored = (from: number) => Promise<number | undefined>;

/**
 * The first sequence of `ranges` the stream still holds: a message the batch
 * should have had but lost in flight. Undefined when every missing sequence was
 * removed by the stream's limits (or deleted), which the checkpoint may pass.
 * One question per range.
 */
export async function firstLost(ranges: readonly SeqRange[], nextStored: NextStored): Promise<number | undefined> {
  for (const range of ranges) {
    const seq = await nextStored(range.from);
    if (seq !== undefined && seq <= range.to) return seq;
  }
  return undefined;
}

/** How many of the batch's messages (in stream order) come before `lost`: the part that may still commit. */
export function prefixBefore(seqs: readonly number[], lost: number): number {
  const i = seqs.findIndex((seq) => seq >= lost);
  return i === -1 ? seqs.length : i;
}

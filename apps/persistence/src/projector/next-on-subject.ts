import type { JetStreamManager, MsgRequest } from '@nats-io/jetstream';

interface Known {
  /** The question was asked from here; */
  from: number;
  /** no event on the subject up to here (and at `to + 1` the one found, if `next`). */
  to: number;
  next?: number;
}

/**
 * "The first event on `subject` at or after `from`", remembered per subject. A
 * wildcard `next_by_subj` makes the server walk the stream's messages from `from`
 * on, so asking again from the same place (an idle partition's checkpoint) would
 * walk more each time; the log only grows at its end, so an answer stays true,
 * and the next question asks the stream only about what came after it.
 */
export class NextOnSubject {
  private readonly known = new Map<string, Known>();

  constructor(
    private readonly manager: () => Promise<JetStreamManager>,
    private readonly stream: string,
  ) {}

  /** The sequence of the first event on `subject` at or after `from`; undefined when there is none up to `lastSeq` (read before asking). */
  async next(subject: string, from: number, lastSeq: number): Promise<number | undefined> {
    const k = this.known.get(subject);
    let start = from;
    if (k && k.from <= from) {
      if (k.next !== undefined && k.next >= from) return k.next;
      if (k.next === undefined && k.to >= from) start = k.to + 1;
    }
    if (start > lastSeq) {
      this.known.set(subject, { from, to: lastSeq });
      return undefined;
    }
    const jsm = await this.manager();
    const found = (await jsm.streams.getMessage(this.stream, { seq: start, next_by_subj: subject } as MsgRequest))?.seq;
    this.known.set(subject, found === undefined ? { from, to: lastSeq } : { from, to: found - 1, next: found });
    return found;
  }

  /** `next`, with the stream's last sequence read first. */
  async nextNow(subject: string, from: number): Promise<number | undefined> {
    const lastSeq = (await (await this.manager()).streams.info(this.stream)).state.last_seq;
    return this.next(subject, from, lastSeq);
  }
}

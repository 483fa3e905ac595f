import type { Logger } from '@nestjs/common';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Subjects } from '@steerline/contracts';
import { NextOnSubject } from './next-on-subject';
import { filteredLayout, partitionOf } from './partitions';

/** Reading the whole log in a layout that could read its own subjects: how often it looks whether it may. */
const PASS_LOOK_MS = 1_000;
/** Reading its own subjects: how often it looks for events written without a partition token, which it does not read. */
const WATCH_LOOK_MS = 5_000;

/** What one follow of a partition reads: its own subjects (`filtered`), or the whole log. */
export interface Reading {
  subject: string;
  filtered: boolean;
}

/**
 * Whether a partition reads its own subjects (`s.partitionEvents(index)`), and
 * when it must switch. It may when the layout is filtered (filteredLayout) and
 * no event without a partition token follows its checkpoint: such an event (from
 * before the engines wrote tokens, or from an engine without the setting) is on no
 * partition's subjects, so the partition reads the whole log past it first.
 */
export class OwnSubjects {
  private readonly next: NextOnSubject;
  private nextLook = 0;
  /** Reading its own subjects, events without a token were looked for from the follow's start up to here. */
  private watchedTo = 0;

  constructor(
    private readonly s: Subjects,
    private readonly manager: () => Promise<JetStreamManager>,
    private readonly index: number,
    private readonly count: number,
    private readonly logger: Logger,
  ) {
    this.next = new NextOnSubject(manager, s.stream);
  }

  /** At a follow's start from `checkpoint`. */
  async reading(checkpoint: number): Promise<Reading> {
    const whole = { subject: this.s.events, filtered: false };
    if (!filteredLayout(this.s, this.count)) return whole;
    this.watchedTo = checkpoint;
    const found = await this.next.nextNow(this.s.unpartitionedEvents, checkpoint + 1);
    this.nextLook = Date.now() + (found === undefined ? WATCH_LOOK_MS : PASS_LOOK_MS);
    if (found === undefined) return { subject: this.s.partitionEvents(this.index), filtered: true };
    this.logger.log({ msg: 'events without a partition token follow the checkpoint; reading the whole log past them', checkpoint, seq: found });
    return whole;
  }

  /**
   * Whether the follow should start again (looked at between batches, now and then).
   * Reading the whole log: once no event without a token follows the checkpoint.
   * Reading its own subjects: once one follows it, also another partition's, so that
   * every checkpoint comes to cover it (coveredThrough); one of its own written
   * behind the checkpoint is past, reported, and projected only by a rebuild.
   */
  async changed(reading: Reading, checkpoint: number): Promise<boolean> {
    if (!filteredLayout(this.s, this.count) || Date.now() < this.nextLook) return false;
    this.nextLook = Date.now() + (reading.filtered ? WATCH_LOOK_MS : PASS_LOOK_MS);
    if (!reading.filtered) return (await this.next.nextNow(this.s.unpartitionedEvents, checkpoint + 1)) === undefined;
    const found = await this.next.nextNow(this.s.unpartitionedEvents, this.watchedTo + 1);
    if (found === undefined) return false;
    this.watchedTo = found;
    if (found > checkpoint) {
      this.logger.warn({ msg: 'an event without a partition token was appended; reading the whole log from the checkpoint', seq: found, checkpoint });
      return true;
    }
    const subject = (await (await this.manager()).streams.getMessage(this.s.stream, { seq: found }))?.subject;
    if (subject !== undefined && partitionOf(subject, this.count) === this.index) {
      this.logger.error({
        msg: 'an event without a partition token was appended behind the checkpoint and is not projected: give every engine STEERLINE_SUBJECT_PARTITIONS, then run `npm run rebuild`',
        seq: found,
        subject,
        checkpoint,
      });
    }
    return false;
  }
}

import type { SteerlineEvent } from '@steerline/contracts';
import { UnappendableEventError, type EventLog } from './event-log';

/**
 * The single writer of one conversation's subject on its owning engine. A
 * running turn and the turns queued behind it append through the same writer,
 * one batch after another, each guarded by the sequence the previous one left,
 * so the owner never races itself and any other writer is refused.
 */
export class ConversationWriter {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly log: EventLog,
    readonly subject: string,
    private lastSeq: number,
  ) {}

  get lastSubjectSeq(): number {
    return this.lastSeq;
  }

  /**
   * Appends after every earlier batch; rejects with the log's error (a stale
   * writer, an unavailable log). An event the log refuses as it is leaves the
   * part of the batch before it appended: the writer goes on from there.
   */
  append(events: SteerlineEvent[]): Promise<void> {
    const done = this.tail.then(async () => {
      try {
        this.lastSeq = await this.log.append(this.subject, events, this.lastSeq);
      } catch (err) {
        if (err instanceof UnappendableEventError) this.lastSeq = err.lastSeq;
        throw err;
      }
    });
    this.tail = done.catch(() => undefined);
    return done;
  }
}

import type { SteerlineEvent } from '@steerline/contracts';
import { UnappendableEventError, type EventLog } from './event-log';

/** Appends a batch at the writer's place in the subject; only a task `serial` runs may call it. */
export type Write = (events: SteerlineEvent[]) => Promise<void>;

/**
 * The single writer of one conversation's subject on its owning engine. A
 * running turn and the decisions about the conversation's other turns append
 * through the same writer, one batch after another, each guarded by the
 * sequence the previous one left, so the owner never races itself and any
 * other writer is refused.
 */
export class ConversationWriter {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly log: EventLog,
    readonly subject: string,
    private lastSeq: number,
    /** Told of every event the log acknowledged, in order (the conversation's state follows the log with it). */
    private readonly appended: (events: SteerlineEvent[]) => void = () => undefined,
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
    return this.serial((write) => write(events));
  }

  /**
   * Runs `task` once every earlier batch is in, and before any later one: what
   * it reads of the conversation then is what the log holds, and what it
   * appends is fenced by that.
   */
  serial<T>(task: (write: Write) => Promise<T>): Promise<T> {
    const done = this.tail.then(() => task((events) => this.write(events)));
    this.tail = done.catch(() => undefined);
    return done;
  }

  private async write(events: SteerlineEvent[]): Promise<void> {
    try {
      this.lastSeq = await this.log.append(this.subject, events, this.lastSeq);
    } catch (err) {
      if (err instanceof UnappendableEventError) {
        this.lastSeq = err.lastSeq;
        this.appended(events.slice(0, err.appended));
      }
      throw err;
    }
    this.appended(events);
  }
}

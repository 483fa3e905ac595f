import { InvalidArgumentError, headers } from '@nats-io/transport-node';
import type { JetStreamClient } from '@nats-io/jetstream';
import {
  isSteerEventType,
  EVENT_TYPE_HEADER,
  JS_WRONG_LAST_SEQUENCE,
  STEER_ID_HEADER,
  encodeEvent,
  jetStreamErrorCode,
  type SteerlineEvent,
} from '@steerline/contracts';

/** Another writer appended to the conversation first: this writer is stale (fenced). */
export class StaleWriterError extends Error {
  constructor(subject: string) {
    super(`another writer appended to ${subject}`);
    this.name = 'StaleWriterError';
  }
}

/** The log did not take an append within the retry window. */
export class LogUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the event log did not acknowledge an append: ${(cause as Error)?.message ?? cause}`, { cause });
    this.name = 'LogUnavailableError';
  }
}

/**
 * The log refuses this event as it is — larger than the server's max_payload —
 * so retrying cannot help. The events before it (`appended` of the batch) are
 * in the log, up to subject sequence `lastSeq`.
 */
export class UnappendableEventError extends Error {
  appended = 0;
  constructor(
    subject: string,
    readonly event: SteerlineEvent,
    public lastSeq: number,
    cause: unknown,
  ) {
    super(`${event.type} could not be appended to ${subject}: ${(cause as Error)?.message ?? cause}`, { cause });
    this.name = 'UnappendableEventError';
  }
}

export interface EventLogOptions {
  /** How long one append is retried (same message id, deduplicated) before giving up. */
  retryForMs: number;
  ackTimeoutMs: number;
}

/**
 * Appends events to a conversation's subject, one at a time, each guarded by
 * the subject's last sequence (optimistic concurrency: a stale or second
 * writer is refused) and carrying its event id as `Nats-Msg-Id` (a retried
 * append is deduplicated by the stream).
 */
export class EventLog {
  constructor(
    private readonly js: JetStreamClient,
    private readonly opts: EventLogOptions = { retryForMs: 10_000, ackTimeoutMs: 2_000 },
    /** Told of each event once the log acknowledged it (the engine's metrics). */
    private readonly appended: (event: SteerlineEvent) => void = () => undefined,
  ) {}

  /** Appends in order; returns the subject's new last sequence. */
  async append(subject: string, events: readonly SteerlineEvent[], expectedLastSeq: number): Promise<number> {
    if (events.length > 1) return this.appendPipelined(subject, events, expectedLastSeq);
    return events.length === 1 ? this.appendOne(subject, events[0], expectedLastSeq) : expectedLastSeq;
  }

  /**
   * Several events in one round trip, still fenced: the first names the
   * subject's expected last sequence; each later one names the previous event
   * as the stream's last message (`Nats-Expected-Last-Msg-Id`), so none is
   * written unless all before it were, back to back. When another subject's
   * message slipped in between (or an ack was lost), the rest is appended one
   * by one from the last acknowledged event; the event ids make any re-send a
   * duplicate the stream recognises.
   */
  private async appendPipelined(subject: string, events: readonly SteerlineEvent[], expectedLastSeq: number): Promise<number> {
    const acks = await Promise.allSettled(
      events.map((event, i) =>
        this.js.publish(subject, encodeEvent(event), {
          msgID: event.id,
          headers: eventHeaders(event),
          expect: i === 0 ? { lastSubjectSequence: expectedLastSeq } : { lastMsgID: events[i - 1].id },
          timeout: this.opts.ackTimeoutMs,
        }),
      ),
    );
    let last = expectedLastSeq;
    for (let i = 0; i < events.length; i++) {
      const ack = acks[i];
      if (ack.status === 'fulfilled') {
        last = ack.value.seq;
        this.appended(events[i]);
        continue;
      }
      if (i === 0 && jetStreamErrorCode(ack.reason) === JS_WRONG_LAST_SEQUENCE) throw new StaleWriterError(subject);
      for (let j = i; j < events.length; j++) {
        try {
          last = await this.appendOne(subject, events[j], last);
        } catch (err) {
          if (err instanceof UnappendableEventError) err.appended = j;
          throw err;
        }
      }
      return last;
    }
    return last;
  }

  private async appendOne(subject: string, event: SteerlineEvent, expectedLastSeq: number): Promise<number> {
    const payload = encodeEvent(event);
    const deadline = Date.now() + this.opts.retryForMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const ack = await this.js.publish(subject, payload, {
          msgID: event.id,
          // The client writes expectation headers into the object it is given: a fresh one each time.
          headers: eventHeaders(event),
          expect: { lastSubjectSequence: expectedLastSeq },
          timeout: this.opts.ackTimeoutMs,
        });
        this.appended(event);
        return ack.seq;
      } catch (err) {
        if (jetStreamErrorCode(err) === JS_WRONG_LAST_SEQUENCE) throw new StaleWriterError(subject);
        // nats.js checks max_payload before sending: nothing was written, and nothing would be on a retry.
        if (err instanceof InvalidArgumentError) throw new UnappendableEventError(subject, event, expectedLastSeq, err);
        if (Date.now() >= deadline) throw new LogUnavailableError(err);
        await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt)));
      }
    }
  }
}

function eventHeaders(event: SteerlineEvent) {
  const h = headers();
  h.set(EVENT_TYPE_HEADER, event.type);
  if (isSteerEventType(event.type)) h.set(STEER_ID_HEADER, (event.data as { steerId: string }).steerId);
  return h;
}

import { InvalidArgumentError, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamApiCodes, PubHeaders } from '@nats-io/jetstream';
import { isSteerEventType, EVENT_TYPE_HEADER, STEER_ID_HEADER, encodeEvent, type SteerlineEvent } from '@steerline/contracts';
import { jetStreamErrorCode } from '@steerline/runtime';
import { AckInbox } from './ack-inbox';
import { EventHeaders } from './event-headers';

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

/** What the log sent and waited for since it opened: the bench counts a boundary's cost with it. */
export interface AppendCounts {
  /** Messages published to the stream (a re-send counts again). */
  publishes: number;
  /** JetStream acknowledgements asked for. */
  acks: number;
  /** Times an append waited for acknowledgements, one after the other. */
  ackRounds: number;
}

/**
 * Appends events to a conversation's subject, each guarded by the subject's
 * last sequence (optimistic concurrency: a stale or second writer is refused)
 * and carrying its event id as `Nats-Msg-Id` (a retried append is
 * deduplicated by the stream).
 */
export class EventLog {
  private readonly acks: AckInbox;
  readonly counts: AppendCounts = { publishes: 0, acks: 0, ackRounds: 0 };

  constructor(
    private readonly nc: NatsConnection,
    private readonly opts: EventLogOptions = { retryForMs: 10_000, ackTimeoutMs: 2_000 },
    /** Told of each event once the log acknowledged it (the engine's metrics). */
    private readonly appended: (event: SteerlineEvent) => void = () => undefined,
  ) {
    this.acks = new AckInbox(nc, opts.ackTimeoutMs);
  }

  /** Appends in order; returns the subject's new last sequence. */
  async append(subject: string, events: readonly SteerlineEvent[], expectedLastSeq: number): Promise<number> {
    if (events.length > 1) return this.appendBatch(subject, events, expectedLastSeq);
    return events.length === 1 ? this.appendOne(subject, events[0], expectedLastSeq) : expectedLastSeq;
  }

  /**
   * Several events for one acknowledgement, still fenced. The first names the
   * subject's expected last sequence; each later one names the event before it
   * as the stream's last message (`Nats-Expected-Last-Msg-Id`), so none is
   * written unless every event before it was, back to back. All but the last
   * are published without asking for an ack (the server takes one
   * connection's messages in order); the last one's ack therefore proves the
   * whole batch is stored. When it does not come — another writer's message
   * slipped in between, an event was refused, the ack was lost — the batch is
   * appended again one by one from its first event: the event ids make what
   * was stored a duplicate the stream answers with its sequence, and the
   * first event's fence still refuses a stale writer.
   */
  private async appendBatch(subject: string, events: readonly SteerlineEvent[], expectedLastSeq: number): Promise<number> {
    const last = events.length - 1;
    const fence = (i: number): Fence => (i === 0 ? { lastSubjectSequence: expectedLastSeq } : { lastMsgID: events[i - 1].id });
    let ack: Promise<number>;
    try {
      for (let i = 0; i < last; i++) this.nc.publish(subject, encodeEvent(events[i]), { headers: fencedHeaders(events[i], fence(i)) });
      this.counts.publishes += last;
      ack = this.publish(subject, events[last], fence(last));
    } catch {
      // Refused before sending (over max_payload): the one-by-one append finds which and says how far it got.
      return this.appendEach(subject, events, expectedLastSeq);
    }
    this.counts.ackRounds += 1;
    let seq: number;
    try {
      seq = await ack;
    } catch {
      return this.appendEach(subject, events, expectedLastSeq);
    }
    for (const event of events) this.appended(event);
    return seq;
  }

  private async appendEach(subject: string, events: readonly SteerlineEvent[], expectedLastSeq: number): Promise<number> {
    let last = expectedLastSeq;
    for (let j = 0; j < events.length; j++) {
      try {
        last = await this.appendOne(subject, events[j], last);
      } catch (err) {
        if (err instanceof UnappendableEventError) err.appended = j;
        throw err;
      }
    }
    return last;
  }

  private async appendOne(subject: string, event: SteerlineEvent, expectedLastSeq: number): Promise<number> {
    const deadline = Date.now() + this.opts.retryForMs;
    for (let attempt = 0; ; attempt++) {
      try {
        this.counts.ackRounds += 1;
        const seq = await this.publish(subject, event, { lastSubjectSequence: expectedLastSeq });
        this.appended(event);
        return seq;
      } catch (err) {
        if (jetStreamErrorCode(err) === JetStreamApiCodes.StreamWrongLastSequence) throw new StaleWriterError(subject);
        // nats.js checks max_payload before sending: nothing was written, and nothing would be on a retry.
        if (err instanceof InvalidArgumentError) throw new UnappendableEventError(subject, event, expectedLastSeq, err);
        if (Date.now() >= deadline) throw new LogUnavailableError(err);
        await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt)));
      }
    }
  }

  /** Publishes one event asking for its ack; resolves with its stream sequence. */
  private publish(subject: string, event: SteerlineEvent, expect: Fence): Promise<number> {
    this.counts.publishes += 1;
    this.counts.acks += 1;
    return this.acks.publish(subject, encodeEvent(event), fencedHeaders(event, expect));
  }
}

/** What an append expects the stream to hold before it: the subject's last sequence, or the event just before it. */
type Fence = { lastSubjectSequence: number } | { lastMsgID: string };

/** An event's headers with its id and fence (the stream checks them whether an ack is asked for or not). */
function fencedHeaders(event: SteerlineEvent, fence: Fence) {
  const h = eventHeaders(event);
  h.set(PubHeaders.MsgIdHdr, event.id);
  if ('lastSubjectSequence' in fence) h.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(fence.lastSubjectSequence));
  else h.set(PubHeaders.ExpectedLastMsgIdHdr, fence.lastMsgID);
  return h.asMsgHdrs();
}

function eventHeaders(event: SteerlineEvent): EventHeaders {
  const h = new EventHeaders();
  h.set(EVENT_TYPE_HEADER, event.type);
  if (isSteerEventType(event.type)) h.set(STEER_ID_HEADER, (event.data as { steerId: string }).steerId);
  return h;
}

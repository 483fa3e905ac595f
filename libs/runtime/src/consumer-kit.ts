import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerConfig,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  decodeEvent,
  DEFAULT_PREFIX,
  EVENT_TYPE_HEADER,
  EVENT_TYPES,
  EventDecodeError,
  parseEventSubject,
  SteerlineError,
  subjects,
  type DecodeFailure,
  type EventType,
  type SteerlineEvent,
  type Subjects,
  type UpcasterRegistry,
} from '@steerline/contracts';
import { jetStreamErrorCode } from './nats';

/**
 * The consumer kit: what a service outside this repository needs to follow
 * the steer events — decode (upcasting, tolerant of unknown fields, typed
 * failures), subjects (`subjects`, `parseEventSubject`) and `consumeEvents`.
 */

export interface EventMeta {
  streamSeq: number;
  subject: string;
  tenantId: string;
  conversationId: string;
  /** 1 on first delivery; more after a failure or a restart before the ack. */
  deliveryCount: number;
  /** Messages of the stream still to come for this consumer. */
  pending: number;
}

export interface ConsumeEventsOptions {
  nc: NatsConnection;
  prefix?: string;
  /** The durable consumer's name; it survives restarts. Run one instance per name at a time. */
  durable: string;
  /** Only these types reach `onEvent`; the rest are skipped by header, without being parsed. */
  types?: readonly EventType[];
  /**
   * The first stream sequence to handle: your stored checkpoint + 1. Your
   * checkpoint wins over the durable's own position: messages before it are
   * acked unseen, and a durable that delivered past it is recreated there.
   * Unset: resume after the durable's last ack (from the start when new).
   */
  fromSeq?: number;
  onEvent(event: SteerlineEvent, meta: EventMeta): Promise<void> | void;
  /**
   * Every message up to `seq` is handled or skipped; store it (with your
   * effects, in one transaction, for exactly-once effects). Runs after
   * `onEvent` and before the ack.
   */
  checkpoint?(seq: number): Promise<void> | void;
  /**
   * A message that does not decode. Default: an unknown event type is skipped
   * (new types are additive), anything else stops the consumer with
   * `EventDecodeError` (an event from a newer writer needs a newer kit).
   */
  onUndecodable?(failure: DecodeFailure, meta: EventMeta): 'skip' | 'stop';
  upcasters?: UpcasterRegistry;
  /** Messages pulled per request. */
  batch?: number;
}

export interface EventConsumer {
  /** Settles when the consumer stops: resolves after `stop()`, rejects with the error that stopped it. */
  readonly done: Promise<void>;
  /** Stops pulling; the callback in flight finishes and is acked first. Never rejects. */
  stop(): Promise<void>;
}

const NANOS_PER_MS = 1_000_000;
const CONSUMER_NOT_FOUND = 10014;
// Skipped messages are checkpointed when the consumer catches up, or this often.
const SKIP_CHECKPOINT_EVERY = 256;

/** The durable pull consumer `consumeEvents` creates (also in the AsyncAPI document). */
export function eventConsumerConfig(s: Subjects, durable: string, startSeq = 1): Partial<ConsumerConfig> & { durable_name: string } {
  return {
    durable_name: durable,
    filter_subject: s.events,
    ack_policy: AckPolicy.Explicit,
    ack_wait: 30_000 * NANOS_PER_MS,
    max_ack_pending: 1000,
    ...(startSeq > 1 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSeq } : { deliver_policy: DeliverPolicy.All }),
  };
}

/**
 * Follows the event stream with a durable JetStream pull consumer, one
 * message at a time in stream order: decode → `onEvent` → `checkpoint` → ack.
 * A callback that throws stops the consumer (the message is not acked, so it
 * comes again on the next start) and rejects `done`.
 */
export async function consumeEvents(opts: ConsumeEventsOptions): Promise<EventConsumer> {
  const s = subjects(opts.prefix ?? DEFAULT_PREFIX);
  if (!/^[A-Za-z0-9_-]+$/.test(opts.durable)) throw new SteerlineError('invalid_request', `durable name ${JSON.stringify(opts.durable)} must be letters, digits, _ or -`);
  const unknown = (opts.types ?? []).filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length) throw new SteerlineError('invalid_request', `unknown event types: ${unknown.join(', ')}`);
  if (opts.fromSeq !== undefined && !(Number.isInteger(opts.fromSeq) && opts.fromSeq >= 1)) throw new SteerlineError('invalid_request', 'fromSeq must be a stream sequence (an integer from 1)');
  const types = opts.types ? new Set<string>(opts.types) : undefined;

  const startSeq = await alignDurable(await jetstreamManager(opts.nc), s, opts.durable, opts.fromSeq);
  const consumer = await jetstream(opts.nc).consumers.get(s.stream, opts.durable);
  const messages = await consumer.consume({ max_messages: opts.batch ?? 256 });
  let stopping = false;

  const loop = async () => {
    let skipped = 0;
    for await (const m of messages) {
      if (stopping) break;
      const meta = metaOf(m);
      if (m.seq < startSeq) {
        m.ack();
        continue;
      }
      const headerType = m.headers?.get(EVENT_TYPE_HEADER);
      let event: SteerlineEvent | undefined;
      if (!(types && headerType && !types.has(headerType))) {
        const decoded = decodeEvent(m.data, { upcasters: opts.upcasters });
        if (decoded.ok) event = decoded.event;
        else if ((opts.onUndecodable ?? defaultUndecodable)(decoded, meta) === 'stop') {
          m.nak();
          throw new EventDecodeError(decoded.reason, `stream sequence ${m.seq}: ${decoded.message}`, { streamSeq: m.seq, subject: m.subject });
        }
      }
      try {
        if (event && (!types || types.has(event.type))) {
          skipped = 0;
          await opts.onEvent(event, meta);
          await opts.checkpoint?.(m.seq);
        } else if (++skipped >= SKIP_CHECKPOINT_EVERY || meta.pending === 0) {
          skipped = 0;
          await opts.checkpoint?.(m.seq);
        }
      } catch (err) {
        m.nak();
        throw err;
      }
      m.ack();
    }
  };

  const done = loop().finally(() => messages.stop());
  // Handled here so a failure is never an unhandled rejection; `done` still rejects for whoever awaits it.
  done.catch(() => undefined);
  return {
    done,
    async stop() {
      stopping = true;
      messages.stop();
      await done.catch(() => undefined);
    },
  };
}

function defaultUndecodable(failure: DecodeFailure): 'skip' | 'stop' {
  return failure.reason === 'unknown_type' ? 'skip' : 'stop';
}

function metaOf(m: JsMsg): EventMeta {
  const where = parseEventSubject(m.subject);
  return {
    streamSeq: m.seq,
    subject: m.subject,
    tenantId: where?.tenantId ?? '',
    conversationId: where?.conversationId ?? '',
    deliveryCount: m.info.deliveryCount,
    pending: m.info.pending,
  };
}

/**
 * Makes the durable start at the right message; returns that message's sequence. It is kept only when it has
 * delivered nothing past the start: messages it handed out but never got an
 * ack for (a crash, a stop) would otherwise come back only after their ack
 * wait, behind newer ones, and break stream order.
 */
async function alignDurable(jsm: JetStreamManager, s: Subjects, durable: string, fromSeq: number | undefined): Promise<number> {
  const existing = await jsm.consumers.info(s.stream, durable).catch((err: unknown) => {
    if (jetStreamErrorCode(err) === CONSUMER_NOT_FOUND) return undefined;
    throw err;
  });
  const start = fromSeq ?? (existing ? existing.ack_floor.stream_seq + 1 : 1);
  // A message handed out and never acked (its handler's effect checkpointed, then a crash) would sit
  // pending until its ack wait and come back late: such a durable is made again at the start too.
  if (existing && existing.delivered.stream_seq < start && existing.num_ack_pending === 0 && existing.config.filter_subject === s.events) return start;
  if (existing) await jsm.consumers.delete(s.stream, durable);
  await jsm.consumers.add(s.stream, eventConsumerConfig(s, durable, start));
  return start;
}

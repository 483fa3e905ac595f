import { connect, type NatsConnection, type Msg, RequestError, TimeoutError } from '@nats-io/transport-node';
import {
  jetstreamManager,
  JetStreamApiError,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { decodeEvent } from './decode';
import { SteerlineError, type ErrorCode } from './errors';
import { errorReply, okReply, unwrapReply, type Reply } from './commands';
import type { SteerlineEvent } from './events';
import { BODY_MAX_BYTES } from './limits';
import type { Subjects } from './subjects';

const NANOS_PER_MS = 1_000_000;

/** The event stream's settings (DESIGN §3); part of the contract consumers rely on. */
export function streamConfig(s: Subjects, replicas = 1): Partial<StreamConfig> & { name: string } {
  return {
    name: s.stream,
    subjects: [s.events],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    num_replicas: replicas,
    // Long enough to cover an append retried across a NATS restart.
    duplicate_window: 10 * 60 * 1000 * NANOS_PER_MS,
    allow_direct: true,
    // Each stored event again on `<prefix>.stored.…` with its sequences: what
    // gateways follow live (one core subscription per watched conversation)
    // instead of holding a JetStream consumer per watcher.
    republish: { src: s.events, dest: s.stored },
  };
}

/**
 * Creates the stream when missing. A stream made by an older release keeps
 * its settings (NATS cannot add a republish rule to an existing stream);
 * gateways notice and follow such a stream the slower way (see the gateway's
 * ConversationTails).
 */
export async function ensureStream(jsm: JetStreamManager, s: Subjects, replicas = 1): Promise<void> {
  const config = streamConfig(s, replicas);
  try {
    await jsm.streams.info(s.stream);
  } catch {
    await jsm.streams.add(config);
  }
}

/** Whether the stream republishes stored events where gateways follow them (`streamConfig`'s rule). */
export function republishesStored(config: Pick<StreamConfig, 'republish'>, s: Subjects): boolean {
  const r = config.republish;
  return r?.src === s.events && r.dest === s.stored && !r.headers_only;
}

export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  // noAsyncTraces: no Error (with its stack) is built ahead of every request and
  // subscription timeout in case it fails; failures are mapped to typed errors anyway.
  return connect({ servers: url.split(','), name, maxReconnectAttempts: -1, reconnectTimeWait: 250, waitOnFirstConnect: false, noAsyncTraces: true });
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeJson(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

export interface RequestOptions {
  timeoutMs: number;
  /** What it means that nobody answers this subject, e.g. `turn_not_running` for a turn's own subject. */
  noResponders: ErrorCode;
}

/** A request/reply call with a bounded wait; failures come back as `SteerlineError`. */
export async function request<T>(nc: NatsConnection, subject: string, body: unknown, opts: RequestOptions): Promise<T> {
  let msg: Msg;
  try {
    msg = await nc.request(subject, encodeJson(body), { timeout: opts.timeoutMs });
  } catch (err) {
    if (err instanceof RequestError && err.isNoResponders()) {
      throw new SteerlineError(opts.noResponders, opts.noResponders === 'turn_not_running' ? 'no engine runs this turn' : `nobody answers ${subject}`);
    }
    if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) {
      throw new SteerlineError('unavailable', `no answer on ${subject} within ${opts.timeoutMs} ms`);
    }
    throw new SteerlineError('unavailable', `request on ${subject} failed: ${(err as Error).message}`);
  }
  return unwrapReply(decodeJson(msg.data) as Reply<T>);
}

export type Handler = (body: unknown, msg: Msg) => Promise<unknown> | unknown;

/**
 * Answers a subject with typed replies. A malformed or oversized message gets
 * `invalid_request`/`payload_too_large`; a handler error is mapped once, here.
 */
export function serve(nc: NatsConnection, subject: string, handler: Handler, opts: { queue?: string; onError?: (err: unknown) => void } = {}) {
  return nc.subscribe(subject, {
    queue: opts.queue,
    callback: (err, msg) => {
      if (err) return opts.onError?.(err);
      void answer(msg, handler, opts.onError);
    },
  });
}

async function answer(msg: Msg, handler: Handler, onError?: (err: unknown) => void): Promise<void> {
  let reply: Reply<unknown>;
  try {
    if (msg.data.length > BODY_MAX_BYTES) throw new SteerlineError('payload_too_large', `message is larger than ${BODY_MAX_BYTES} bytes`);
    let body: unknown;
    try {
      body = msg.data.length ? decodeJson(msg.data) : {};
    } catch {
      throw new SteerlineError('invalid_request', 'message is not valid JSON');
    }
    reply = okReply(await handler(body, msg));
  } catch (err) {
    if (!(err instanceof SteerlineError)) onError?.(err);
    reply = errorReply(err);
  }
  if (msg.reply) msg.respond(encodeJson(reply));
}

export interface StoredEvent {
  streamSeq: number;
  subject: string;
  event: SteerlineEvent;
}

/**
 * Reads one subject of the event log from its start up to its current end with
 * an ordered consumer. Undecodable messages are skipped (the projector keeps them).
 */
export async function readSubject(js: JetStreamClient, jsm: JetStreamManager, stream: string, subject: string, fromSeq = 1): Promise<StoredEvent[]> {
  const last = await lastMessageSeq(jsm, stream, subject);
  if (last === 0 || last < fromSeq) return [];
  const consumer = await js.consumers.get(stream, {
    filter_subjects: subject,
    deliver_policy: fromSeq > 1 ? DeliverPolicy.StartSequence : DeliverPolicy.All,
    ...(fromSeq > 1 ? { opt_start_seq: fromSeq } : {}),
  });
  const out: StoredEvent[] = [];
  const messages = await consumer.consume({ max_messages: 512 });
  try {
    for await (const m of messages) {
      const decoded = decodeEvent(m.data);
      if (decoded.ok) out.push({ streamSeq: m.seq, subject: m.subject, event: decoded.event });
      if (m.seq >= last) break;
    }
  } finally {
    await messages.close();
    await consumer.delete().catch(() => undefined);
  }
  return out;
}

/**
 * Reads one conversation's subject with direct gets, one message at a time:
 * no consumer is created, so it keeps working while a cluster node is down
 * (consumer placement may wait on a dead peer). Meant for short histories.
 * `lastSeq` is the subject's true last sequence, counting undecodable messages.
 */
export async function readConversation(jsm: JetStreamManager, stream: string, subject: string): Promise<{ events: StoredEvent[]; lastSeq: number }> {
  const last = await lastMessage(jsm, stream, subject);
  if (!last) return { events: [], lastSeq: 0 };
  const events: StoredEvent[] = [];
  let seq = 1;
  for (let misses = 0; seq <= last.seq; ) {
    const msg = await jsm.direct.getMessage(stream, { seq, next_by_subj: subject }).catch((err: unknown) => {
      if (isNoMessage(err)) return null;
      throw err;
    });
    if (!msg) {
      // A replica that answers a direct get may trail the leader by a moment.
      if (++misses > 20) throw new Error(`${subject} could not be read up to sequence ${last.seq}`);
      await new Promise((r) => setTimeout(r, 25));
      continue;
    }
    const decoded = decodeEvent(msg.data);
    if (decoded.ok) events.push({ streamSeq: msg.seq, subject, event: decoded.event });
    seq = msg.seq + 1;
  }
  return { events, lastSeq: last.seq };
}

/** The stream sequence of the last message on a subject, 0 when there is none. */
export async function lastMessageSeq(jsm: JetStreamManager, stream: string, subject: string): Promise<number> {
  return (await lastMessage(jsm, stream, subject))?.seq ?? 0;
}

/** The last message on a subject, with its event when it decodes; undefined when there is none. */
export async function lastMessage(jsm: JetStreamManager, stream: string, subject: string): Promise<{ seq: number; event?: SteerlineEvent } | undefined> {
  const msg = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch((err: unknown) => {
    if (isNoMessage(err)) return null;
    throw err;
  });
  if (!msg) return undefined;
  const decoded = decodeEvent(msg.data);
  return { seq: msg.seq, event: decoded.ok ? decoded.event : undefined };
}

/** JetStream API error codes this code base reacts to. */
export const JS_NO_MESSAGE_FOUND = 10037;
export const JS_WRONG_LAST_SEQUENCE = 10071;

export function jetStreamErrorCode(err: unknown): number | undefined {
  return err instanceof JetStreamApiError ? err.code : undefined;
}

function isNoMessage(err: unknown): boolean {
  return jetStreamErrorCode(err) === JS_NO_MESSAGE_FOUND;
}

export { jetstreamManager };

import { connect, headers as natsHeaders, type NatsConnection, type Msg, type MsgHdrs, RequestError, TimeoutError } from '@nats-io/transport-node';
import {
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StoredMsg,
  type StreamConfig,
} from '@nats-io/jetstream';
import {
  BODY_MAX_BYTES,
  decodeEvent,
  type ErrorCode,
  errorReply,
  okReply,
  type Reply,
  SteerlineError,
  type ConversationLog,
  type SteerlineEvent,
  type Subjects,
  unwrapReply,
} from '@steerline/contracts';
import { describeConnectFailure, natsSecurityOptions, watchNatsAuth } from './nats-auth';
import { nestReply, nestRequest, type NestRequest } from './nest-envelope';
import { settleAnswersQuietly } from './nats-requests';
import { maxPayload, publishSafely, tooLarge } from './safe-send';

const NANOS_PER_MS = 1_000_000;

/** The event stream's settings (docs/design.md §3); part of the contract consumers rely on. */
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

/**
 * Connects to NATS with the security the environment asks for (see
 * nats-auth.ts: user/password, token, creds, NKEY seed, TLS, inbox prefix).
 * A first connection the server refuses fails at once with one line saying
 * what to check; later drops are retried for ever.
 */
export async function connectNats(url: string, name: string, env: Record<string, string | undefined> = process.env): Promise<NatsConnection> {
  const security = natsSecurityOptions(url, env);
  // An answered request builds no error for nobody (nats-requests.ts).
  settleAnswersQuietly();
  let nc: NatsConnection;
  try {
    // noAsyncTraces: no Error (with its stack) is built ahead of every request and
    // subscription timeout in case it fails; failures are mapped to typed errors anyway.
    nc = await connect({
      servers: url.split(','),
      name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      waitOnFirstConnect: false,
      noAsyncTraces: true,
      // Credentials refused after start-up (expired, rotated) are retried like any drop,
      // with readiness false meanwhile, instead of closing the connection for good.
      ignoreAuthErrorAbort: true,
      // A deployment with subject permissions gives each role its own inboxes (deploy/nats/).
      ...(env.NATS_INBOX_PREFIX ? { inboxPrefix: env.NATS_INBOX_PREFIX } : {}),
      ...security,
    });
  } catch (err) {
    throw describeConnectFailure(err, url, env);
  }
  watchNatsAuth(nc, name);
  return nc;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** As UTF-8 bytes in Node's shared pool (`Buffer.from`), not an ArrayBuffer per message (`TextEncoder`). */
export function encodeJson(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value));
}

export function decodeJson(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

export interface RequestOptions {
  timeoutMs: number;
  /** What it means that nobody answers this subject, e.g. `turn_not_running` for a turn's own subject. */
  noResponders: ErrorCode;
  /** Headers of the request (a fresh set per request). */
  headers?: Record<string, string>;
}

/** NATS headers holding `values` (a fresh set each call: the client writes into the one it is given). */
function headersOf(values: Record<string, string>) {
  const h = natsHeaders();
  for (const [k, v] of Object.entries(values)) h.set(k, v);
  return h;
}

/** A request/reply call with a bounded wait; failures come back as `SteerlineError`. */
export async function request<T>(nc: NatsConnection, subject: string, body: unknown, opts: RequestOptions): Promise<T> {
  return unwrapReply(decodeJson((await requestMessage(nc, subject, body, opts)).data) as Reply<T>);
}

/** `request`'s reply message as it came (failures to get one are its typed errors, as for `request`). */
async function requestMessage(nc: NatsConnection, subject: string, body: unknown, opts: RequestOptions): Promise<Msg> {
  const data = encodeJson(body);
  // Checked before sending: the client would throw a bare InvalidArgumentError.
  if (data.length > maxPayload(nc)) throw tooLarge(`the request on ${subject}`, data.length, maxPayload(nc));
  let msg: Msg;
  try {
    msg = await nc.request(subject, data, { timeout: opts.timeoutMs, ...(opts.headers && { headers: headersOf(opts.headers) }) });
  } catch (err) {
    if (err instanceof RequestError && err.isNoResponders()) {
      throw new SteerlineError(opts.noResponders, opts.noResponders === 'turn_not_running' ? 'no engine runs this turn' : `nobody answers ${subject}`);
    }
    if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) {
      throw new SteerlineError('unavailable', `no answer on ${subject} within ${opts.timeoutMs} ms`);
    }
    throw new SteerlineError('unavailable', `request on ${subject} failed: ${(err as Error).message}`);
  }
  return msg;
}

/**
 * `request`, answered with the reply message itself when it carries `header` (its body is then
 * the caller's to read as it knows it is laid out); otherwise the reply is decoded as usual and
 * an error reply thrown as its typed error.
 */
export async function requestWithHeader<T>(nc: NatsConnection, subject: string, body: unknown, header: string, opts: RequestOptions): Promise<{ header: string; data: Uint8Array; headers: MsgHdrs } | { value: T }> {
  const msg = await requestMessage(nc, subject, body, opts);
  const found = msg.headers?.get(header);
  return found ? { header: found, data: msg.data, headers: msg.headers! } : { value: unwrapReply(decodeJson(msg.data) as Reply<T>) };
}

export type Handler = (body: unknown, msg: Msg) => Promise<unknown> | unknown;

/**
 * A handler's answer already encoded: `dataJson` is the JSON text of the reply's `data`, sent as
 * `{"ok":true,"data":<dataJson>}` without being parsed or encoded again; `headers` are the reply's
 * headers, given the byte offset at which `dataJson` starts in the body.
 */
export class EncodedReply {
  constructor(
    readonly dataJson: string,
    readonly headers: (dataOffset: number) => Record<string, string> = () => ({}),
  ) {}
}

const OK_PREFIX = '{"ok":true,"data":';
/** Told about every failure a caller cannot see: a handler's untyped error, a reply that could not be sent. */
export type ServeErrorHandler = (err: unknown, context: { subject: string }) => void;

/**
 * Answers a subject with typed replies. A malformed or oversized message gets
 * `invalid_request`/`payload_too_large`; a handler error is mapped once, here.
 * Nothing a handler returns or throws, and no failed send, escapes: an answer
 * over the server's `max_payload` is replaced by a `payload_too_large` error,
 * and a send on a closed connection is reported to `onError` (the caller's own
 * wait then ends as `unavailable`).
 */
export function serve(nc: NatsConnection, subject: string, handler: Handler, opts: { queue?: string; onError?: ServeErrorHandler } = {}) {
  const report: ServeErrorHandler = (err, context) => {
    try {
      opts.onError?.(err, context);
    } catch {
      // A failing logger must not take the responder down with it.
    }
  };
  return nc.subscribe(subject, {
    queue: opts.queue,
    callback: (err, msg) => {
      if (err) return report(err, { subject });
      void answer(nc, msg, handler, report);
    },
  });
}

/**
 * Answers one request with `handler`'s result or its typed error (what `serve` does per message).
 * A request a Nest `ClientProxy` sent (`{pattern, data, id}`, see nest-envelope.ts) gets its
 * `data` to the handler and the answer in Nest's shape.
 */
export async function answer(nc: NatsConnection, msg: Msg, handler: Handler, report: ServeErrorHandler): Promise<void> {
  let reply: Reply<unknown>;
  let nest: NestRequest | undefined;
  try {
    if (msg.data.length > BODY_MAX_BYTES) throw new SteerlineError('payload_too_large', `message is larger than ${BODY_MAX_BYTES} bytes`);
    let body: unknown;
    try {
      body = msg.data.length ? decodeJson(msg.data) : {};
    } catch {
      throw new SteerlineError('invalid_request', 'message is not valid JSON');
    }
    nest = nestRequest(body, msg.subject);
    const result = await handler(nest ? nest.data : body, msg);
    if (result instanceof EncodedReply) {
      // A Nest client gets its envelope; everyone else the encoded text as it is.
      if (nest) reply = okReply(JSON.parse(result.dataJson));
      else return replyEncoded(nc, msg, result, report);
    } else reply = okReply(result);
  } catch (err) {
    if (!(err instanceof SteerlineError)) report(err, { subject: msg.subject });
    reply = errorReply(err);
  }
  const shape = nest ? (r: Reply<unknown>) => nestReply(nest.id, r) : (r: Reply<unknown>) => r;
  if (msg.reply) replySafely(nc, msg.reply, shape(reply), msg.subject, report, shape);
}

function replyEncoded(nc: NatsConnection, msg: Msg, result: EncodedReply, report: ServeErrorHandler): void {
  if (!msg.reply) return;
  const failure = publishSafely(nc, msg.reply, encoder.encode(`${OK_PREFIX}${result.dataJson}}`), { headers: headersOf(result.headers(OK_PREFIX.length)) });
  if (!failure) return;
  report(failure, { subject: msg.subject });
  if (failure.code === 'payload_too_large') publishSafely(nc, msg.reply, encodeJson(errorReply(failure)));
}

/**
 * Sends a reply; an oversized one is answered with its typed error instead. Never throws.
 * `shape` puts that error in the caller's envelope (Nest's, for a Nest request).
 */
export function replySafely(
  nc: NatsConnection,
  inbox: string,
  reply: unknown,
  subject: string,
  report: ServeErrorHandler,
  shape: (error: Reply<never>) => unknown = (error) => error,
): void {
  let data: Uint8Array;
  try {
    data = encodeJson(reply);
  } catch (err) {
    report(err, { subject });
    data = encodeJson(shape(errorReply(err)));
  }
  const failure = publishSafely(nc, inbox, data);
  if (!failure) return;
  report(failure, { subject });
  // The caller still hears why, when the connection can carry the error.
  if (failure.code === 'payload_too_large') publishSafely(nc, inbox, encodeJson(shape(errorReply(failure))));
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
  const out: StoredEvent[] = [];
  for await (const e of streamSubject(js, jsm, stream, subject, { fromSeq })) out.push(e);
  return out;
}

/**
 * `readSubject` one event at a time, for logs too long to hold: the consumer
 * pulls ahead by at most `bufferMessages`. `onMessage` sees every message's
 * stream sequence (decodable or not) and the last one it will read up to.
 */
export async function* streamSubject(
  js: JetStreamClient,
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  opts: { fromSeq?: number; bufferMessages?: number; onMessage?: (seq: number, last: number) => void } = {},
): AsyncGenerator<StoredEvent> {
  const fromSeq = opts.fromSeq ?? 1;
  const last = await lastMessageSeq(jsm, stream, subject);
  if (last === 0 || last < fromSeq) return;
  const consumer = await js.consumers.get(stream, {
    filter_subjects: subject,
    deliver_policy: fromSeq > 1 ? DeliverPolicy.StartSequence : DeliverPolicy.All,
    ...(fromSeq > 1 ? { opt_start_seq: fromSeq } : {}),
  });
  const messages = await consumer.consume({ max_messages: opts.bufferMessages ?? 512 });
  try {
    for await (const m of messages) {
      opts.onMessage?.(m.seq, last);
      const decoded = decodeEvent(m.data);
      if (decoded.ok) yield { streamSeq: m.seq, subject: m.subject, event: decoded.event };
      if (m.seq >= last) break;
    }
  } finally {
    await messages.close();
    await consumer.delete().catch(() => undefined);
  }
}

/** Direct gets before a conversation read switches to a consumer: a first turn's history is a handful. */
const DIRECT_GETS_FIRST = 64;
const CONSUMER_READ_TIMEOUT_MS = 15_000;

/**
 * Reads one conversation's subject. The first messages come by direct gets,
 * one at a time: no consumer is created, so a short history reads while a
 * cluster node is down (consumer placement may wait on a dead peer). A longer
 * one continues through one ordered consumer (a round trip per batch, not per
 * message: 20 000 events in about a second instead of tens), and falls back to
 * direct gets when the consumer does not deliver in time.
 * `lastSeq` is the subject's true last sequence, counting undecodable messages.
 */
export async function readConversation(jsm: JetStreamManager, stream: string, subject: string): Promise<{ events: StoredEvent[]; lastSeq: number }> {
  const last = await lastMessage(jsm, stream, subject);
  if (!last) return { events: [], lastSeq: 0 };
  const events: StoredEvent[] = [];
  let seq = 1;
  for (let misses = 0, gets = 0; seq <= last.seq; ) {
    if (gets++ === DIRECT_GETS_FIRST) {
      const rest = await readByConsumer(jsm, stream, subject, seq, last.seq);
      if (rest) return { events: [...events, ...rest], lastSeq: last.seq };
    }
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
    if (decoded.ok) events.push({ streamSeq: msg.seq, subject: msg.subject, event: decoded.event });
    seq = msg.seq + 1;
  }
  return { events, lastSeq: last.seq };
}

/** The subject's events from `fromSeq` to `lastSeq` through an ordered consumer; undefined when it did not answer in time. */
async function readByConsumer(jsm: JetStreamManager, stream: string, subject: string, fromSeq: number, lastSeq: number): Promise<StoredEvent[] | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), CONSUMER_READ_TIMEOUT_MS)));
  const read = readSubject(jsm.jetstream(), jsm, stream, subject, fromSeq)
    .then((events) => events.filter((e) => e.streamSeq <= lastSeq))
    .catch(() => undefined);
  try {
    return await Promise.race([read, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads a conversation wherever its events are: on each subject of `at.read`
 * (both subject forms, Subjects.conversationLog), merged in stream order. `lastSeq`
 * is the last sequence on `at.write`, counting undecodable messages: what the next
 * append there is fenced by (0 when the conversation has no event there yet, e.g.
 * its history is all on the unpartitioned subject). Undefined when it has no event
 * at all. A conversation whose only event is ConversationCreated needs one get per subject, at once.
 */
export async function readConversationAt(
  jsm: JetStreamManager,
  stream: string,
  at: ConversationLog,
): Promise<{ events: StoredEvent[]; lastSeq: number } | undefined> {
  const separate = !at.read.includes(at.write);
  const [writeLast, ...lasts] = await Promise.all([separate ? lastMessage(jsm, stream, at.write) : undefined, ...at.read.map((subject) => lastMessage(jsm, stream, subject))]);
  const lastSeq = (separate ? writeLast : lasts[at.read.indexOf(at.write)])?.seq ?? 0;
  const present = at.read.filter((_, i) => lasts[i] !== undefined);
  if (present.length === 0) return undefined;
  const only = present.length === 1 ? lasts.find((l) => l !== undefined) : undefined;
  if (only?.event?.type === 'ConversationCreated') return { events: [{ streamSeq: only.seq, subject: only.subject, event: only.event }], lastSeq };
  const reads = await Promise.all(present.map((subject) => readConversation(jsm, stream, subject)));
  const events = reads.length === 1 ? reads[0].events : reads.flatMap((r) => r.events).sort((a, b) => a.streamSeq - b.streamSeq);
  return { events, lastSeq };
}

/** The latest of the last messages on `subjects` (a conversation's subject forms), undefined when none has any. */
export async function lastMessageOf(jsm: JetStreamManager, stream: string, subjects: readonly string[]): Promise<{ seq: number; subject: string; event?: SteerlineEvent } | undefined> {
  const lasts = await Promise.all(subjects.map((subject) => lastMessage(jsm, stream, subject)));
  return lasts.reduce((latest, l) => (l && (!latest || l.seq > latest.seq) ? l : latest), undefined);
}

/** The first message at or after `seq` on any of `subjects`, null when there is none: one direct get each, at once. */
export async function nextMessageOf(jsm: JetStreamManager, stream: string, subjects: readonly string[], seq: number): Promise<StoredMsg | null> {
  const found = await Promise.all(
    subjects.map((subject) =>
      jsm.direct.getMessage(stream, { seq, next_by_subj: subject }).catch((err: unknown) => {
        if (isNoMessage(err)) return null;
        throw err;
      }),
    ),
  );
  return found.reduce<StoredMsg | null>((first, m) => (m && (!first || m.seq < first.seq) ? m : first), null);
}

/** The stream sequence of the last message on a subject, 0 when there is none. */
export async function lastMessageSeq(jsm: JetStreamManager, stream: string, subject: string): Promise<number> {
  return (await lastMessage(jsm, stream, subject))?.seq ?? 0;
}

/** The last message on a subject, with its event when it decodes; undefined when there is none. */
export async function lastMessage(jsm: JetStreamManager, stream: string, subject: string): Promise<{ seq: number; subject: string; event?: SteerlineEvent } | undefined> {
  const msg = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch((err: unknown) => {
    if (isNoMessage(err)) return null;
    throw err;
  });
  if (!msg) return undefined;
  const decoded = decodeEvent(msg.data);
  return { seq: msg.seq, subject: msg.subject, event: decoded.ok ? decoded.event : undefined };
}

export function jetStreamErrorCode(err: unknown): number | undefined {
  return err instanceof JetStreamApiError ? err.code : undefined;
}

function isNoMessage(err: unknown): boolean {
  return jetStreamErrorCode(err) === JetStreamApiCodes.NoMessageFound;
}

export { jetstreamManager };

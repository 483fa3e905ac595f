import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { Match, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { RepublishHeaders, type StoredMsg } from '@nats-io/jetstream';
import { EVENT_TYPE_HEADER, type Subjects } from '@steerline/contracts';
import { decodeJson } from '@steerline/runtime';
import { EventLogClient } from '../nats/event-log.client';
import { NATS_CONNECTION, SUBJECTS } from '../nats/nats.tokens';
import { sseEvent, sseLive } from './sse';

/** A stored event as the stream republished it, framed once for every watcher of its conversation. */
export interface StoredFrame {
  /** Its stream sequence. */
  seq: number;
  /** The previous stream sequence on the same conversation subject (0: none): a watcher that has not sent it has a gap. */
  last: number;
  frame: string;
}

/** A stored event read from the log, framed. */
export interface LoggedFrame {
  seq: number;
  frame: string;
}

// Reads kept per watched conversation: the watchers of one conversation
// replay through them, so a reconnect storm reads each event once per gateway.
const READS_KEPT = 256;

/** One watcher of a conversation, as the tail sees it. */
export interface TailMember {
  onStored(stored: StoredFrame): void;
  /** A live message (ModelDelta, ToolProgress), framed without an id. */
  onLive(frame: string): void;
  /** The NATS connection was away: anything may have been missed; re-read from the log. */
  resync(): void;
}

// A stream made by an older release has no republish rule: its tails ring on
// every raw publish and the watchers re-read the log. A publish reaches core
// subscribers before the stream has stored it, so the log is read again after these delays.
const RECHECK_MS = [25, 250];

/** Gets every stored event message of a conversation as it arrives (receipt waits): no live messages, no framing. */
export type StoredListener = (msg: Msg) => void;

interface Tail {
  members: Set<TailMember>;
  /** Each listener once, however many waits it holds (a count each): one message, one call. */
  listeners: Map<StoredListener, number>;
  /**
   * "The conversation's first event at or after sequence n", by n. A found
   * answer never changes (the log only grows at its end), so it is kept;
   * a pending one is shared; "none yet" is never kept.
   */
  reads: Map<number, Promise<LoggedFrame | null>>;
  /** Pending re-reads after a doorbell (older streams only). */
  rechecks: NodeJS.Timeout[];
  /** Its stored events' subscriptions, one per subject form (conversationEventSubjects): where its events are appended now may be either. */
  stored: Subscription[];
  /** Only while a watcher is here: listeners need no live output. */
  live?: Subscription;
  /** The highest stream sequence handed to the members. */
  latest: number;
  /** Resolves once the server has the subscriptions, so nothing stored after it is missed. */
  ready: Promise<void>;
}

/**
 * The gateway's interest in the conversations its clients watch or wait on: per
 * conversation, while at least one client watches it or waits for a steer's
 * receipt in it, one core subscription to its republished stored events
 * (`<prefix>.stored.<tenant>.<conversation>`, carrying stream sequences; with
 * subject partitions a second one, the same with its partition token), and
 * while someone watches, one to its live messages. Reference-counted: the
 * first watcher or waiter subscribes, the last one to leave unsubscribes. No
 * JetStream consumer is held, and events of conversations nobody here
 * watches never reach this gateway (docs/design.md §15).
 *
 * On a stream without the republish rule (made by an older release; NATS
 * cannot add it later) the tail subscribes to the conversation's event
 * subject instead and uses each message only as a doorbell: it may be one the
 * stream refused, and it carries no sequence, so every watcher re-reads the
 * log from its own position. Still exact, one direct get more per event.
 */
@Injectable()
export class ConversationTails implements OnModuleDestroy {
  private readonly log = new Logger('events');
  private readonly tails = new Map<string, Tail>();
  private closed = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
    @Inject(EventLogClient) private readonly eventLog: EventLogClient,
  ) {
    void this.watchReconnects();
  }

  onModuleDestroy(): void {
    this.closed = true;
    for (const tail of this.tails.values()) stop(tail);
    this.tails.clear();
  }

  /** Conversations with at least one watcher here (one subscription pair each). */
  get size(): number {
    return this.tails.size;
  }

  /**
   * Adds `member` to the conversation's tail, subscribing when it is the first;
   * resolves once the subscription is live on the server. Returns the leave function.
   */
  async join(tenantId: string, conversationId: string, member: TailMember): Promise<() => void> {
    const tail = this.tail(tenantId, conversationId, await this.eventLog.republishes());
    tail.members.add(member);
    if (!tail.live) {
      tail.live = this.nc.subscribe(this.s.conversationLive(tenantId, conversationId), { callback: (err, msg) => (err ? this.failed(err) : fanOutLive(tail.members, msg)) });
      tail.ready = this.nc.flush();
    }
    return this.entered(tenantId, conversationId, tail, () => tail.members.delete(member));
  }

  /**
   * Hands `heard` every stored event of the conversation from now on (a
   * receipt wait), sharing the watchers' subscription; resolves once the
   * server has it. Without a known stream (not made yet, or not answering)
   * it listens to the event subject, as for a stream without republish.
   */
  async listen(tenantId: string, conversationId: string, heard: StoredListener): Promise<() => void> {
    const tail = this.tail(tenantId, conversationId, await this.eventLog.republishes().catch(() => false));
    tail.listeners.set(heard, (tail.listeners.get(heard) ?? 0) + 1);
    return this.entered(tenantId, conversationId, tail, () => release(tail.listeners, heard));
  }

  /** The conversation's tail, made (with its stored-events subscription) when it has none. */
  private tail(tenantId: string, conversationId: string, republished: boolean): Tail {
    const key = `${tenantId}.${conversationId}`;
    const existing = this.tails.get(key);
    if (existing) return existing;
    const created: Tail = { members: new Set(), listeners: new Map(), rechecks: [], reads: new Map(), latest: 0, ready: Promise.resolve(), stored: [] };
    const onStored = (msg: Msg) => {
      for (const heard of [...created.listeners.keys()]) heard(msg);
      if (created.members.size === 0) return;
      if (republished) fanOutStored(created, msg);
      else ring(created);
    };
    const forms = republished ? this.s.conversationStoredSubjects(tenantId, conversationId) : this.s.conversationEventSubjects(tenantId, conversationId);
    created.stored = forms.map((subject) => this.nc.subscribe(subject, { callback: (err, msg) => (err ? this.failed(err) : onStored(msg)) }));
    created.ready = this.nc.flush();
    this.tails.set(key, created);
    return created;
  }

  /** Waits until the tail's subscriptions are live; returns the leave function (which unsubscribes after the last one). */
  private entered(tenantId: string, conversationId: string, tail: Tail, remove: () => boolean): Promise<() => void> {
    const key = `${tenantId}.${conversationId}`;
    return enter(tail.ready, () => {
      if (!remove()) return;
      if (tail.members.size === 0 && tail.live) {
        tail.live.unsubscribe();
        tail.live = undefined;
      }
      if (tail.members.size > 0 || tail.listeners.size > 0) return;
      stop(tail);
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
  }

  /** The highest stream sequence of the conversation this gateway's subscription has handed out (0: none, or not watched here). */
  latest(tenantId: string, conversationId: string): number {
    return this.tails.get(`${tenantId}.${conversationId}`)?.latest ?? 0;
  }

  /**
   * The conversation's first stored event at or after `fromSeq`, or null when
   * it has none yet: through the tail's kept reads when it is watched here,
   * else one direct get on the log.
   */
  next(tenantId: string, conversationId: string, fromSeq: number): Promise<LoggedFrame | null> {
    const read = () => this.eventLog.next(tenantId, conversationId, fromSeq).then((m) => m && { seq: m.seq, frame: frameOf(m) });
    const tail = this.tails.get(`${tenantId}.${conversationId}`);
    if (!tail) return read();
    const kept = tail.reads.get(fromSeq);
    if (kept) return kept;
    const reading = read();
    keep(tail, fromSeq, reading);
    reading.then(
      (found) => found || tail.reads.delete(fromSeq),
      () => tail.reads.delete(fromSeq),
    );
    return reading;
  }

  // The client resubscribes after a reconnect, but what was published while it
  // was away is gone from core NATS: every watcher re-reads from its position.
  private async watchReconnects(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (this.closed) return;
      if (status.type !== 'reconnect') continue;
      for (const tail of this.tails.values()) for (const m of [...tail.members]) m.resync();
    }
  }

  private failed(err: Error): void {
    this.log.error('conversation subscription failed', { error: err.message });
  }
}

/**
 * Enters a reference-counted subscription: waits until it is live (`ready`)
 * and returns `leave`, which acts once however often it is called (a second
 * call must not take another holder's count). When the subscription fails,
 * leaves at once and throws.
 */
export async function enter(ready: Promise<void>, leave: () => void): Promise<() => void> {
  let left = false;
  const once = () => {
    if (left) return;
    left = true;
    leave();
  };
  try {
    await ready;
  } catch (err) {
    once();
    throw err;
  }
  return once;
}

/** Takes one count off `key`; true when it was there. */
export function release<K>(counts: Map<K, number>, key: K): boolean {
  const n = counts.get(key);
  if (n === undefined) return false;
  if (n > 1) counts.set(key, n - 1);
  else counts.delete(key);
  return true;
}

function stop(tail: Tail): void {
  for (const sub of tail.stored) sub.unsubscribe();
  tail.live?.unsubscribe();
  for (const timer of tail.rechecks) clearTimeout(timer);
}

function ring(tail: Tail): void {
  const resync = () => {
    for (const m of [...tail.members]) m.resync();
  };
  resync();
  if (tail.rechecks.length > 0) return;
  tail.rechecks = RECHECK_MS.map((ms, i) =>
    setTimeout(() => {
      resync();
      if (i === RECHECK_MS.length - 1) tail.rechecks = [];
    }, ms),
  );
}

function keep(tail: Tail, fromSeq: number, read: Promise<LoggedFrame | null>): void {
  tail.reads.set(fromSeq, read);
  if (tail.reads.size > READS_KEPT) tail.reads.delete(tail.reads.keys().next().value!);
}

export function frameOf(m: StoredMsg): string {
  const type = m.header?.get(EVENT_TYPE_HEADER, Match.IgnoreCase) || typeOf(m.data);
  return sseEvent(m.seq, type, m.string());
}

function fanOutStored(tail: Tail, msg: Msg): void {
  const members = tail.members;
  const seq = Number(msg.headers?.get(RepublishHeaders.Sequence));
  const previous = Number(msg.headers?.get(RepublishHeaders.LastSequence) || 0);
  if (!Number.isSafeInteger(seq) || seq <= 0 || !Number.isSafeInteger(previous)) return;
  // The previous sequence is the subject's. The first event on a partitioned subject may follow the
  // conversation's history on the unpartitioned one: unknown, so read (seq - 1 sends watchers to the log).
  const partitioned = msg.subject.split('.').length === 5;
  const last = previous === 0 && partitioned ? seq - 1 : previous;
  const type = msg.headers?.get(EVENT_TYPE_HEADER, Match.IgnoreCase) || typeOf(msg.data);
  // The stored bytes are the event: sent as they are, never re-encoded.
  const stored = { seq, last, frame: sseEvent(seq, type, msg.string()) };
  // It is the first event after its predecessor: a watcher replaying from there needs no read.
  keep(tail, last + 1, Promise.resolve({ seq, frame: stored.frame }));
  tail.latest = Math.max(tail.latest, seq);
  for (const m of [...members]) m.onStored(stored);
}

function fanOutLive(members: Set<TailMember>, msg: Msg): void {
  const type = typeOf(msg.data);
  if (type === 'message') return;
  const frame = sseLive(type, msg.string());
  for (const m of [...members]) m.onLive(frame);
}

/** The envelope's `type`, for a message written without the type header (not by this engine). */
export function typeOf(data: Uint8Array): string {
  try {
    const type = (decodeJson(data) as { type?: unknown }).type;
    return typeof type === 'string' && /^[A-Za-z]{1,64}$/.test(type) ? type : 'message';
  } catch {
    return 'message';
  }
}

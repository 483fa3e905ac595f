import { Logger } from '@nestjs/common';
import type { Consumer, ConsumerCallbackFn, ConsumerMessages, FetchOptions, JetStreamClient, JetStreamManager, JsMsg, MsgRequest } from '@nats-io/jetstream';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import type { Subjects } from '@steerline/contracts';
import { lockGeneration, type Generation } from '../read-models/generations';
import { activeCheckpoint } from '../read-models/store';
import { decodeBatch, projectBatch, toLogMessage, type BatchOutcome, type DecodedBatch } from './batch';
import { alignConsumer } from './consumer';
import { firstLost, missingRanges, prefixBefore } from './continuity';
import type { DeadLetters } from './dead-letters';
import { OwnSubjects, type Reading } from './own-subjects';
import { partitionOf } from './partitions';

const BATCH_MAX = 500;
const FETCH_EXPIRES_MS = 1_000;
const IDLE_EXPIRES_MS = 5_000;
/**
 * Under live load, the next fetch waits for events to gather (while the batch before it commits).
 * A batch's cost is mostly fixed — a transaction of five statements, a pull request, an ack, the
 * consumer's pending count — so small batches cost the read side several times its batch path per
 * event (issue 34). Only while events keep coming: a lone event, and a backlog, are fetched at once.
 * It looks at the consumer's pending count LINGER_MS after the last fetch; if events came
 * meanwhile, it waits about as long as they need, at the rate they came, to reach LINGER_TARGET,
 * looks again, and goes on while they keep coming, for at most LINGER_MAX_MS in all.
 */
const LINGER_MS = 20;
const LINGER_MAX_MS = 100;
const LINGER_TARGET = 400;
/** A wait shorter than this is not worth another look. */
const LINGER_MIN_WAIT_MS = 5;
const RETRY_MS = 1_000;

/** What a partition's loop needs from the instance running it. */
export interface PartitionHost {
  s: Subjects;
  js: JetStreamClient;
  manager(): Promise<JetStreamManager>;
  dataSource: DataSource;
  deadLetters: DeadLetters;
  /** Whether this instance still holds the partition's lock (checked before every batch). */
  holds(lockKey: string): boolean;
  /** After a batch committed. */
  committed(partition: number, outcome: BatchOutcome): void;
  fault?: 'exit_after_commit';
}

interface Fetched {
  /** Everything fetched, in stream order: what continuity and the ack look at. */
  msgs: JsMsg[];
  /** Only this partition's events, decoded; `lastSeq` covers the others too. */
  batch: DecodedBatch;
}

/** The batch was fetched for one generation and a rebuild has since made another one active. */
class GenerationSwitched extends Error {
  constructor(readonly from: number, readonly to: number) {
    super(`read-model generation switched from ${from} to ${to}`);
    this.name = 'GenerationSwitched';
  }
}

/** A fetch lost messages in flight; the consumer is realigned to hand them out again. */
class DeliveryLost extends Error {
  constructor(readonly lostSeq: number) {
    super(`stream sequence ${lostSeq} was delivered but never arrived`);
    this.name = 'DeliveryLost';
  }
}

/**
 * One partition's loop: fetch a batch from its durable consumer, keep its own
 * conversations' events, apply them in one transaction with its checkpoint, ack.
 * Runs while the instance holds the partition's lock and the active generation
 * has the layout it was started for.
 */
export class PartitionLoop {
  private readonly logger: Logger;
  private running = false;
  private loop?: Promise<void>;
  private fetching?: ConsumerMessages;
  private stopping = new AbortController();
  private generation?: Generation;
  private switched = false;
  /**
   * The stream sequence this partition has committed up to: every event of its
   * own up to it is applied. Reading the whole log, every event up to it was
   * read; reading its own subjects, it is its last own event's (the others'
   * events are not read at all: `coveredThrough` says how far it covers).
   */
  checkpoint = 0;
  private reading: Reading = { subject: '', filtered: false };
  private readonly own: OwnSubjects;
  /** The consumer's delivery sequence of the last message this follow committed: on its own subjects, continuity is checked on these. */
  private delivered = 0;

  constructor(
    private readonly host: PartitionHost,
    readonly index: number,
    readonly count: number,
    /** Its consumer's and checkpoint's name (partitionName). */
    readonly name: string,
    readonly lockKey: string,
  ) {
    this.logger = new Logger(count > 1 ? `Projector[${index + 1}/${count}]` : 'Projector');
    this.own = new OwnSubjects(host.s, () => host.manager(), index, count, this.logger);
  }

  /** False once the loop ended by itself: the lock was lost, or the layout changed. */
  get active(): boolean {
    return this.running;
  }

  start(): void {
    this.running = true;
    this.loop = this.run().catch((err: unknown) => this.logger.fatal({ msg: 'projector loop ended', error: describe(err) }));
  }

  /** Stops fetching and lets the batch in flight commit. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    this.fetching?.stop();
    await this.loop;
  }

  /** A rebuild activated another generation: finish the batch in flight, then start over from its checkpoint. */
  followSwitch(): void {
    this.switched = true;
    this.fetching?.stop();
  }

  private async run(): Promise<void> {
    while (this.running && this.host.holds(this.lockKey)) {
      try {
        if ((await this.follow()) === 'layout changed') break;
      } catch (err) {
        if (!this.running) break;
        if (err instanceof GenerationSwitched) {
          this.logger.log({ msg: 'a rebuild switched the read models; following the new generation', from: err.from, to: err.to });
          continue;
        }
        // Already reported where it was found; following again realigns the consumer at the checkpoint.
        if (err instanceof DeliveryLost) continue;
        this.logger.error({ msg: 'projection failed; realigning and retrying', partition: this.index, error: describe(err) });
        await sleep(RETRY_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
    this.running = false;
  }

  /** Applies batches for as long as this instance is the partition's writer. */
  private async follow(): Promise<'layout changed' | void> {
    const jsm = await this.host.manager();
    this.switched = false;
    const { generation, checkpoint: stored } = await activeCheckpoint(this.host.dataSource, () => [this.name]);
    if (generation.partitions !== this.count) return 'layout changed';
    this.generation = generation;
    this.checkpoint = stored;
    const { s } = this.host;
    const stream = await jsm.streams.info(s.stream);
    if (stream.state.last_seq < stored) {
      // The read models were built from another log (the stream was recreated). Replacing
      // them is the operator's call (`npm run rebuild`); until then new events are skipped.
      this.logger.error({ msg: 'checkpoint is ahead of the stream; run `npm run rebuild` to rebuild the read models from this log', checkpoint: stored, lastSeq: stream.state.last_seq });
    }
    this.reading = await this.own.reading(stored);
    const info = await alignConsumer(jsm, s, this.name, stored, this.reading.subject);
    this.delivered = info.delivered.consumer_seq;
    this.logger.log({ msg: 'projecting', consumer: this.name, filter: this.reading.subject, generation: generation.id, checkpoint: stored, pending: info.num_pending });
    const consumer = await this.host.js.consumers.get(s.stream, this.name);
    const nothing: Promise<Fetched> = Promise.resolve({ msgs: [], batch: decodeBatch([]) });
    let next = prefetch(this.fetch(consumer, info.num_pending));
    try {
      for (;;) {
        const fetched = await next;
        const more = this.running && this.host.holds(this.lockKey) && !this.switched;
        // Fetch and decode the next batch while this one commits: one waits on NATS and
        // the CPU, the other on PostgreSQL. At most one fetch is in flight.
        const pending = fetched.msgs.length ? fetched.msgs[fetched.msgs.length - 1].info.pending : 0;
        const live = (pending > 0 || fetched.msgs.length > 1) && pending + fetched.msgs.length < BATCH_MAX;
        next = more ? prefetch(live ? this.fetchAfterLinger(consumer, pending) : this.fetch(consumer, pending)) : nothing;
        // A batch fetched as the projector stops is still committed: work in flight finishes.
        if (fetched.msgs.length) await this.commit(fetched);
        if (!more) return;
        // Between batches: whether to read its own subjects from now on, or the whole log again.
        if (await this.own.changed(this.reading, this.checkpoint)) return;
      }
    } finally {
      this.fetching?.stop();
      await next.catch(() => undefined);
    }
  }

  /**
   * A fetch made once events stop coming, LINGER_TARGET are pending, or LINGER_MAX_MS passed (cut
   * short when the loop stops). A fetch for more than is there waits for its expiry, so it asks
   * for what the consumer reports pending (one `CONSUMER.INFO` a look).
   */
  private async fetchAfterLinger(consumer: Consumer, pending: number): Promise<Fetched> {
    const start = performance.now();
    let seen = pending;
    for (let wait = LINGER_MS; ; ) {
      await sleep(wait, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      if (!this.running || this.switched) break;
      const before = seen;
      seen = Math.max(seen, (await consumer.info()).num_pending);
      const elapsed = performance.now() - start;
      if (seen <= before || seen >= LINGER_TARGET) break;
      wait = Math.min(LINGER_MAX_MS - elapsed, ((LINGER_TARGET - seen) * elapsed) / (seen - pending));
      if (wait < LINGER_MIN_WAIT_MS) break;
    }
    return this.fetch(consumer, seen);
  }

  private async fetch(consumer: Consumer, pending: number): Promise<Fetched> {
    // A fetch ends when it is full or expires. With nothing known to be pending, ask
    // for one message, so the first event after a quiet spell is not held back by the
    // expiry; its `pending` count then sizes the next batch.
    // Handed over by a callback as they arrive, not through the async iterator: that is a generator's
    // yield and a promise per message (issue 34). The fetch's end (full, expired, stopped or failed) is
    // `closed()`. nats.js 3.4's fetch takes `callback` as consume does (the same PullConsumerMessages),
    // though only consume's options type it; projector.spec.ts covers both ends.
    const msgs: JsMsg[] = [];
    const callback: ConsumerCallbackFn = (m) => void msgs.push(m);
    const messages = await consumer.fetch({
      ...(pending > 0 ? { max_messages: Math.min(pending, BATCH_MAX), expires: FETCH_EXPIRES_MS } : { max_messages: 1, expires: IDLE_EXPIRES_MS }),
      callback,
    } as FetchOptions);
    this.fetching = messages;
    if (!this.running || this.switched) messages.stop();
    try {
      const failed = await messages.closed();
      if (failed) throw failed;
    } finally {
      this.fetching = undefined;
    }
    return { msgs, batch: this.ownBatch(msgs) };
  }

  /** Decodes this partition's events only: another partition's costs a subject hash. */
  private ownBatch(msgs: JsMsg[]): DecodedBatch {
    const own = this.count > 1 && !this.reading.filtered ? msgs.filter((m) => partitionOf(m.subject, this.count) === this.index) : msgs;
    return decodeBatch(own.map(toLogMessage), msgs.length ? msgs[msgs.length - 1].seq : 0);
  }

  /**
   * Commits the batch if it continues the log right after the checkpoint. If a
   * message between them is still in the stream, the fetch lost it in flight:
   * only the part before it commits, and the consumer is realigned to hand it
   * out again (acking later messages would ack it too, and its conversation
   * would stall on the gap). Sequences the stream's limits removed are skipped.
   */
  private async commit(fetched: Fetched): Promise<void> {
    const seqs = fetched.msgs.map((m) => m.seq);
    const lost = this.reading.filtered ? this.lostDelivery(fetched.msgs) : await this.lostInFlight(seqs);
    if (lost === undefined) return this.apply(fetched);
    const keep = prefixBefore(seqs, lost);
    if (keep > 0) {
      const { messages, decoded } = fetched.batch;
      const own = prefixBefore(messages.map((m) => m.streamSeq), lost);
      await this.apply({ msgs: fetched.msgs.slice(0, keep), batch: { messages: messages.slice(0, own), decoded: decoded.slice(0, own), lastSeq: seqs[keep - 1] } });
    }
    this.logger.warn({ msg: 'a fetch lost messages in flight; fetching again from the checkpoint', lostSeq: lost, checkpoint: this.checkpoint, fetched: seqs.length, committed: keep });
    throw new DeliveryLost(lost);
  }

  private async lostInFlight(seqs: number[]): Promise<number | undefined> {
    const ranges = missingRanges(this.checkpoint, seqs);
    return ranges.length ? await firstLost(ranges, (from) => this.nextStored(from)) : undefined;
  }

  /**
   * Reading its own subjects, the stream sequences between its events belong to
   * other partitions; the consumer's delivery sequences have no gap unless a
   * delivery was lost in flight. The stream sequence of the first message after one.
   */
  private lostDelivery(msgs: JsMsg[]): number | undefined {
    const gap = msgs.findIndex((m, i) => m.info.deliverySequence !== this.delivered + 1 + i);
    return gap === -1 ? undefined : msgs[gap].seq;
  }

  /** The first event still in the stream at or after `from` (one request; NATS ≥ 2.9 takes `next_by_subj`). */
  private async nextStored(from: number): Promise<number | undefined> {
    return storedSeq(await this.host.manager(), this.host.s.stream, { seq: from, next_by_subj: this.host.s.events } as MsgRequest);
  }

  private async apply({ msgs, batch }: Fetched): Promise<void> {
    const expected = this.generation!;
    const outcome = await this.host.dataSource.transaction(async (db) => {
      // Held until commit: a rebuild cannot switch generations under this batch.
      const active = await lockGeneration(db, expected);
      if (active !== expected.id) throw new GenerationSwitched(expected.id, active);
      return projectBatch(db, [this.name], batch, this.host.deadLetters);
    });
    // Fault tests only (STEERLINE_FAULT): die in the one window where a crash must change nothing.
    if (this.host.fault === 'exit_after_commit') process.kill(process.pid, 'SIGKILL');
    // After the commit: a crash before this ack only causes a redelivery, which the checkpoint skips.
    msgs[msgs.length - 1].ack();
    this.delivered = msgs[msgs.length - 1].info.deliverySequence;
    this.checkpoint = outcome.checkpoint;
    this.host.committed(this.index, outcome);
  }
}

/** The stream sequence a get names (one request to the stream's leader), undefined when there is none. */
async function storedSeq(jsm: JetStreamManager, stream: string, query: MsgRequest): Promise<number | undefined> {
  return (await jsm.streams.getMessage(stream, query))?.seq;
}

/**
 * A prefetch may fail while the batch before it commits, before anyone awaits it;
 * marking it handled keeps that from being an unhandled rejection (which ends the
 * process). Its failure still surfaces where it is awaited.
 */
function prefetch<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

export function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

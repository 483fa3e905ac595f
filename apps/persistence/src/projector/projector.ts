import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { jetstream, jetstreamManager, type Consumer, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg, type MsgRequest } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { ensureStream, subjects, type Subjects } from '@steerline/contracts';
import { PERSISTENCE_CONFIG, type PersistenceConfig } from '../config';
import { NATS_CONNECTION } from '../connections';
import { GENERATION_CHANNEL, lockGeneration, type Generation } from '../read-models/generations';
import { activeCheckpoint } from '../read-models/store';
import { decodeBatch, projectBatch, toLogMessage, type BatchOutcome, type DecodedBatch } from './batch';
import { alignConsumer } from './consumer';
import { firstLost, missingRanges, prefixBefore } from './continuity';
import { TableDeadLetters, type DeadLetters } from './dead-letters';
import { LeaderLock } from './leader-lock';
import { CheckpointWaiters } from './waiters';

const BATCH_MAX = 500;
const FETCH_EXPIRES_MS = 1_000;
const IDLE_EXPIRES_MS = 5_000;
const RETRY_MS = 1_000;
const STANDBY_RETRY_MS = 2_000;

interface Fetched {
  msgs: JsMsg[];
  batch: DecodedBatch;
}

/** What tests and the app see of the projector. */
export interface ProjectorControl {
  start(): Promise<void>;
  /** Stops fetching and lets the batch in flight commit. */
  stop(): Promise<void>;
  /** Resolves once this instance has committed the read models up to stream sequence `seq`. */
  waitForSeq(seq: number, timeoutMs?: number): Promise<void>;
  /** The stream's last sequence minus the active generation's checkpoint. */
  lag(): Promise<number>;
  readonly checkpoint: number;
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

/** The loop: fetch a batch, apply it in one transaction with its checkpoint, ack. */
@Injectable()
export class Projector implements ProjectorControl, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(Projector.name);
  private readonly s: Subjects;
  private readonly lock: LeaderLock;
  private readonly deadLetters: DeadLetters = new TableDeadLetters();
  private readonly waiters = new CheckpointWaiters();
  private readonly js: JetStreamClient;
  private jsm?: JetStreamManager;
  private running = false;
  private loop?: Promise<void>;
  private fetching?: ConsumerMessages;
  private stopping = new AbortController();
  /** The generation the consumer was aligned for; batches commit only into it. */
  private generation?: Generation;
  private switched = false;

  constructor(
    @Inject(PERSISTENCE_CONFIG) private readonly config: PersistenceConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly dataSource: DataSource,
  ) {
    this.s = subjects(config.prefix);
    this.lock = new LeaderLock(config.databaseUrl, `steerline-projector:${this.s.projectorConsumer}`, {
      channel: GENERATION_CHANNEL,
      onNotify: () => this.followSwitch(),
    });
    this.js = jetstream(nc);
  }

  get checkpoint(): number {
    return this.waiters.position;
  }

  async onApplicationBootstrap(): Promise<void> {
    await ensureStream(await this.manager(), this.s, this.config.streamReplicas);
    await this.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.stop();
    this.waiters.rejectAll(new Error('projector closed'));
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.waiters.advance((await activeCheckpoint(this.dataSource, this.s.projectorConsumer)).checkpoint);
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.run().catch((err: unknown) => this.logger.fatal({ msg: 'projector loop ended', error: describe(err) }));
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopping.abort();
    this.fetching?.stop();
    await this.loop;
  }

  waitForSeq(seq: number, timeoutMs = 10_000): Promise<void> {
    return this.waiters.waitFor(seq, timeoutMs);
  }

  async lag(): Promise<number> {
    const [info, stored] = await Promise.all([
      (await this.manager()).streams.info(this.s.stream),
      activeCheckpoint(this.dataSource, this.s.projectorConsumer),
    ]);
    return Math.max(0, info.state.last_seq - stored.checkpoint);
  }

  private async run(): Promise<void> {
    let standingBy = false;
    while (this.running) {
      try {
        if (!(await this.lock.tryAcquire())) {
          if (!standingBy) this.logger.log({ msg: 'another instance is projecting; standing by', consumer: this.s.projectorConsumer });
          standingBy = true;
          await sleep(STANDBY_RETRY_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
          continue;
        }
        standingBy = false;
        await this.follow();
      } catch (err) {
        if (!this.running) break;
        if (err instanceof GenerationSwitched) {
          this.logger.log({ msg: 'a rebuild switched the read models; following the new generation', from: err.from, to: err.to });
          continue;
        }
        // Already reported where it was found; following again realigns the consumer at the checkpoint.
        if (err instanceof DeliveryLost) continue;
        this.logger.error({ msg: 'projection failed; realigning and retrying', error: describe(err) });
        await sleep(RETRY_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
    await this.lock.release();
  }

  /** Applies batches for as long as this instance is the writer. */
  private async follow(): Promise<void> {
    const jsm = await this.manager();
    this.switched = false;
    const { generation, checkpoint: stored } = await activeCheckpoint(this.dataSource, this.s.projectorConsumer);
    this.generation = generation;
    this.waiters.advance(stored);
    const stream = await jsm.streams.info(this.s.stream);
    if (stream.state.last_seq < stored) {
      // The read models were built from another log (the stream was recreated). Replacing
      // them is the operator's call (`npm run rebuild`); until then new events are skipped.
      this.logger.error({ msg: 'checkpoint is ahead of the stream; run `npm run rebuild` to rebuild the read models from this log', checkpoint: stored, lastSeq: stream.state.last_seq });
    }
    const info = await alignConsumer(jsm, this.s, stored);
    this.logger.log({ msg: 'projecting', consumer: this.s.projectorConsumer, generation: generation.id, checkpoint: stored, pending: info.num_pending });
    const consumer = await this.js.consumers.get(this.s.stream, this.s.projectorConsumer);
    const nothing: Promise<Fetched> = Promise.resolve({ msgs: [], batch: decodeBatch([]) });
    let next = prefetch(this.fetch(consumer, info.num_pending));
    try {
      for (;;) {
        const fetched = await next;
        const more = this.running && this.lock.held && !this.switched;
        // Fetch and decode the next batch while this one commits: one waits on NATS and
        // the CPU, the other on PostgreSQL. At most one fetch is in flight.
        next = more ? prefetch(this.fetch(consumer, fetched.msgs.length ? fetched.msgs[fetched.msgs.length - 1].info.pending : 0)) : nothing;
        // A batch fetched as the projector stops is still committed: work in flight finishes.
        if (fetched.msgs.length) await this.commit(fetched);
        if (!more) return;
      }
    } finally {
      this.fetching?.stop();
      await next.catch(() => undefined);
    }
  }

  private async fetch(consumer: Consumer, pending: number): Promise<Fetched> {
    // A fetch ends when it is full or expires. With nothing known to be pending, ask
    // for one message, so the first event after a quiet spell is not held back by the
    // expiry; its `pending` count then sizes the next batch.
    const messages = await consumer.fetch(
      pending > 0 ? { max_messages: Math.min(pending, BATCH_MAX), expires: FETCH_EXPIRES_MS } : { max_messages: 1, expires: IDLE_EXPIRES_MS },
    );
    this.fetching = messages;
    if (!this.running || this.switched) messages.stop();
    const msgs: JsMsg[] = [];
    try {
      for await (const m of messages) msgs.push(m);
    } finally {
      this.fetching = undefined;
    }
    return { msgs, batch: decodeBatch(msgs.map(toLogMessage)) };
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
    const ranges = missingRanges(this.checkpoint, seqs);
    const lost = ranges.length ? await firstLost(ranges, (from) => this.nextStored(from)) : undefined;
    if (lost === undefined) return this.apply(fetched);
    const keep = prefixBefore(seqs, lost);
    if (keep > 0) {
      const { messages, decoded } = fetched.batch;
      await this.apply({ msgs: fetched.msgs.slice(0, keep), batch: { messages: messages.slice(0, keep), decoded: decoded.slice(0, keep) } });
    }
    this.logger.warn({ msg: 'a fetch lost messages in flight; fetching again from the checkpoint', lostSeq: lost, checkpoint: this.checkpoint, fetched: seqs.length, committed: keep });
    throw new DeliveryLost(lost);
  }

  /** The first event still in the stream at or after `from` (one request; NATS ≥ 2.9 takes `next_by_subj`). */
  private async nextStored(from: number): Promise<number | undefined> {
    const query = { seq: from, next_by_subj: this.s.events } as MsgRequest;
    return (await (await this.manager()).streams.getMessage(this.s.stream, query))?.seq;
  }

  private async apply({ msgs, batch }: Fetched): Promise<void> {
    const expected = this.generation!;
    const outcome = await this.dataSource.transaction(async (db) => {
      // Held until commit: a rebuild cannot switch generations under this batch.
      const active = await lockGeneration(db, expected);
      if (active !== expected.id) throw new GenerationSwitched(expected.id, active);
      return projectBatch(db, this.s.projectorConsumer, batch, this.deadLetters);
    });
    // Fault tests only (STEERLINE_FAULT): die in the one window where a crash must change nothing.
    if (this.config.fault === 'exit_after_commit') process.kill(process.pid, 'SIGKILL');
    // After the commit: a crash before this ack only causes a redelivery, which the checkpoint skips.
    msgs[msgs.length - 1].ack();
    this.report(outcome);
    this.waiters.advance(outcome.checkpoint);
  }

  private report(outcome: BatchOutcome): void {
    if (outcome.duplicates > 0) {
      this.logger.warn({ msg: 'events already applied were appended again; skipped', count: outcome.duplicates, checkpoint: outcome.checkpoint });
    }
    for (const stall of outcome.stalls) {
      this.logger.error({
        msg: 'conversation stalled: an event of one of its turns is missing; its later events are parked until a rebuild',
        conversationId: stall.conversationId,
        turnId: stall.turnId,
        eventId: stall.eventId,
        expectedSeq: stall.expectedSeq,
        foundSeq: stall.foundSeq,
      });
    }
  }

  /** A rebuild activated another generation: finish the batch in flight, then start over from its checkpoint. */
  private followSwitch(): void {
    this.switched = true;
    this.fetching?.stop();
  }

  private async manager(): Promise<JetStreamManager> {
    this.jsm ??= await jetstreamManager(this.nc);
    return this.jsm;
  }
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

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

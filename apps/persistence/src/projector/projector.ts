import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { jetstream, jetstreamManager, type Consumer, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { ensureStream, subjects, type Subjects } from '@steerline/contracts';
import { PERSISTENCE_CONFIG, type PersistenceConfig } from '../config';
import { NATS_CONNECTION } from '../connections';
import { readCheckpoint } from '../read-models/store';
import { decodeBatch, projectBatch, type DecodedBatch } from './batch';
import { alignConsumer } from './consumer';
import { LoggedDeadLetters, type DeadLetters } from './dead-letters';
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
  /** The stream's last sequence minus the stored checkpoint. */
  lag(): Promise<number>;
  readonly checkpoint: number;
}

/** The loop: fetch a batch, apply it in one transaction with its checkpoint, ack. */
@Injectable()
export class Projector implements ProjectorControl, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(Projector.name);
  private readonly s: Subjects;
  private readonly lock: LeaderLock;
  private readonly deadLetters: DeadLetters = new LoggedDeadLetters();
  private readonly waiters = new CheckpointWaiters();
  private readonly js: JetStreamClient;
  private jsm?: JetStreamManager;
  private running = false;
  private loop?: Promise<void>;
  private fetching?: ConsumerMessages;
  private stopping = new AbortController();

  constructor(
    @Inject(PERSISTENCE_CONFIG) config: PersistenceConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly dataSource: DataSource,
  ) {
    this.s = subjects(config.prefix);
    this.lock = new LeaderLock(config.databaseUrl, `steerline-projector:${this.s.projectorConsumer}`);
    this.js = jetstream(nc);
  }

  get checkpoint(): number {
    return this.waiters.position;
  }

  async onApplicationBootstrap(): Promise<void> {
    await ensureStream(await this.manager(), this.s);
    await this.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.stop();
    this.waiters.rejectAll(new Error('projector closed'));
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.waiters.advance(await readCheckpoint(this.dataSource.manager, this.s.projectorConsumer));
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
      readCheckpoint(this.dataSource.manager, this.s.projectorConsumer),
    ]);
    return Math.max(0, info.state.last_seq - stored);
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
        this.logger.error({ msg: 'projection failed; realigning and retrying', error: describe(err) });
        await sleep(RETRY_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
    await this.lock.release();
  }

  /** Applies batches for as long as this instance is the writer. */
  private async follow(): Promise<void> {
    const jsm = await this.manager();
    const stored = await readCheckpoint(this.dataSource.manager, this.s.projectorConsumer);
    this.waiters.advance(stored);
    const stream = await jsm.streams.info(this.s.stream);
    if (stream.state.last_seq < stored) {
      // The read models were built from another log (the stream was recreated). Rebuilding
      // means dropping them, which is the operator's call; new events would be skipped.
      this.logger.error({ msg: 'checkpoint is ahead of the stream; drop the database to rebuild it', checkpoint: stored, lastSeq: stream.state.last_seq });
    }
    const info = await alignConsumer(jsm, this.s, stored);
    this.logger.log({ msg: 'projecting', consumer: this.s.projectorConsumer, checkpoint: stored, pending: info.num_pending });
    const consumer = await this.js.consumers.get(this.s.stream, this.s.projectorConsumer);
    const nothing: Promise<Fetched> = Promise.resolve({ msgs: [], batch: decodeBatch([]) });
    let next = prefetch(this.fetch(consumer, info.num_pending));
    try {
      for (;;) {
        const fetched = await next;
        const more = this.running && this.lock.held;
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
    if (!this.running) messages.stop();
    const msgs: JsMsg[] = [];
    try {
      for await (const m of messages) msgs.push(m);
    } finally {
      this.fetching = undefined;
    }
    return { msgs, batch: decodeBatch(msgs.map((m) => ({ streamSeq: m.seq, subject: m.subject, data: m.data }))) };
  }

  private async commit({ msgs, batch }: Fetched): Promise<void> {
    const outcome = await this.dataSource.transaction((db) => projectBatch(db, this.s.projectorConsumer, batch, this.deadLetters));
    // After the commit: a crash before this ack only causes a redelivery, which the checkpoint skips.
    msgs[msgs.length - 1].ack();
    if (outcome.duplicates > 0) {
      this.logger.warn({ msg: 'events already applied were appended again; skipped', count: outcome.duplicates, checkpoint: outcome.checkpoint });
    }
    this.waiters.advance(outcome.checkpoint);
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

import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { stableHash, subjects, type Subjects } from '@steerline/contracts';
import { ensureStream } from '@steerline/runtime';
import { PERSISTENCE_CONFIG, type PersistenceConfig } from '../config';
import { NATS_CONNECTION } from '../connections';
import { GENERATION_CHANNEL } from '../read-models/generations';
import { activeCheckpoint, activeCheckpoints } from '../read-models/store';
import type { BatchOutcome } from './batch';
import { TableDeadLetters, type DeadLetters } from './dead-letters';
import { PartitionLocks } from './partition-locks';
import { describe, PartitionLoop, type PartitionHost } from './partition-loop';
import { coveredThrough } from './coverage';
import { NextOnSubject } from './next-on-subject';
import { balance, fairShare, filteredLayout, partitionName, partitionNames } from './partitions';
import { CheckpointWaiters } from './waiters';
import { PersistenceMetrics } from '../observability/persistence-metrics';

/** How often an instance counts the live instances and takes or gives back partitions. */
const BALANCE_MS = 1_000;
/** How often a caller waiting for a checkpoint re-reads the partitions other instances hold. */
const WAIT_POLL_MS = 50;

/** What tests and the app see of the projector. */
export interface ProjectorControl {
  start(): Promise<void>;
  /** Stops fetching and lets the batches in flight commit; gives back every partition. */
  stop(): Promise<void>;
  /** Resolves once every partition (whichever instance holds it) has committed up to stream sequence `seq`. */
  waitForSeq(seq: number, timeoutMs?: number): Promise<void>;
  /** The stream's last sequence minus the active generation's checkpoint (its lowest partition's). */
  lag(): Promise<number>;
  /** The stream sequence every partition has reached, as far as this instance knows. */
  readonly checkpoint: number;
  /** The partitions this instance projects now. */
  readonly partitions: readonly number[];
}

/**
 * Runs this instance's share of the partitions (docs/design.md, "Partitioned
 * projection"): every second it counts the live instances, gives back the
 * partitions above its share and tries free ones up to it; each partition it
 * holds runs its own loop (PartitionLoop). A dead instance's partitions are
 * free as soon as its database session ends.
 */
@Injectable()
export class Projector implements ProjectorControl, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(Projector.name);
  private readonly s: Subjects;
  private readonly locks: PartitionLocks;
  private readonly waiters = new CheckpointWaiters();
  private readonly loops = new Map<number, PartitionLoop>();
  private readonly host: PartitionHost;
  private readonly offset = stableHash(randomUUID());
  private jsm?: JetStreamManager;
  private running = false;
  private loop?: Promise<void>;
  private stopping = new AbortController();
  /** The active generation's partition count the loops run for. */
  private layout = 0;
  private polling?: Promise<void>;
  private standingBy = false;
  /** What coveredThrough asked the stream, so that it asks only about what came since. */
  private readonly coverage: NextOnSubject;

  constructor(
    @Inject(PERSISTENCE_CONFIG) private readonly config: PersistenceConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly dataSource: DataSource,
    private readonly metrics: PersistenceMetrics,
  ) {
    this.s = subjects(config.prefix, { subjectPartitions: config.subjectPartitions });
    this.coverage = new NextOnSubject(() => this.manager(), this.s.stream);
    this.locks = new PartitionLocks(config.databaseUrl, this.s.projectorConsumer, {
      channel: GENERATION_CHANNEL,
      onNotify: () => this.loops.forEach((l) => l.followSwitch()),
    });
    const js: JetStreamClient = jetstream(nc);
    const deadLetters: DeadLetters = new TableDeadLetters();
    this.host = {
      s: this.s,
      js,
      manager: () => this.manager(),
      dataSource,
      deadLetters,
      holds: (key) => this.locks.holds(key),
      committed: (partition, outcome) => this.committed(partition, outcome),
      ...(config.fault && { fault: config.fault }),
    };
  }

  get checkpoint(): number {
    return this.waiters.position;
  }

  get partitions(): number[] {
    return [...this.loops.keys()].sort((a, b) => a - b);
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
    this.waiters.advance(await this.globalCheckpoint());
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.run().catch((err: unknown) => this.logger.fatal({ msg: 'projector loop ended', error: describe(err) }));
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopping.abort();
    await this.loop;
  }

  waitForSeq(seq: number, timeoutMs = 10_000): Promise<void> {
    const waiting = this.waiters.waitFor(seq, timeoutMs);
    if (seq > this.waiters.position) this.pollWhileWaiting();
    return waiting;
  }

  async lag(): Promise<number> {
    const [info, checkpoint] = await Promise.all([(await this.manager()).streams.info(this.s.stream), this.globalCheckpoint()]);
    return Math.max(0, info.state.last_seq - checkpoint);
  }

  /** After every committed batch: the hook for logs (and metrics). */
  report(outcome: BatchOutcome, partition = 0): void {
    this.metrics.batch(outcome);
    if (outcome.duplicates > 0) {
      this.logger.warn({ msg: 'events already applied were appended again; skipped', count: outcome.duplicates, checkpoint: outcome.checkpoint, partition });
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

  private committed(partition: number, outcome: BatchOutcome): void {
    this.report(outcome, partition);
    // Holding every partition of a layout that reads the whole log, this instance knows the checkpoint they all
    // reached. Otherwise (or where partitions read only their own subjects) waiters ask, now.
    if (this.loops.size === this.layout && !filteredLayout(this.s, this.layout)) {
      this.waiters.advance(Math.max(this.waiters.position, Math.min(...[...this.loops.values()].map((l) => l.checkpoint))));
    } else if (this.waiters.pending > 0) this.pollWhileWaiting();
  }

  private async run(): Promise<void> {
    try {
      while (this.running) {
        await this.rebalance().catch((err: unknown) => this.logger.error({ msg: 'projector could not rebalance its partitions; retrying', error: describe(err) }));
        await sleep(BALANCE_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    } finally {
      await Promise.all([...this.loops.values()].map((l) => l.stop()));
      this.loops.clear();
      await this.locks.close();
    }
  }

  /** One balancing round: follow the active layout, drop ended loops, then give back or take partitions. */
  private async rebalance(): Promise<void> {
    await this.locks.join();
    const { generation, checkpoint } = await activeCheckpoint(this.dataSource, (g) => partitionNames(this.s.projectorConsumer, g.partitions));
    this.waiters.advance(Math.max(this.waiters.position, checkpoint));
    if (generation.partitions !== this.layout) await this.relayout(generation.partitions);
    for (const [index, loop] of this.loops) {
      if (loop.active) continue;
      await this.giveBack(index);
    }
    const members = await this.locks.members();
    const plan = balance({ count: this.layout, members, held: this.partitions, offset: this.offset });
    for (const index of plan.release) {
      await this.giveBack(index);
      this.logger.log({ msg: 'gave back a partition for another instance', partition: index, partitions: this.layout, members });
    }
    for (const index of plan.tryAcquire) {
      if (!this.running || this.loops.size >= fairShare(this.layout, members)) break;
      const name = partitionName(this.s.projectorConsumer, index, this.layout);
      if (!(await this.locks.tryAcquire(lockKey(name)))) continue;
      const loop = new PartitionLoop(this.host, index, this.layout, name, lockKey(name));
      this.loops.set(index, loop);
      loop.start();
      this.logger.log({ msg: 'projecting a partition', partition: index, partitions: this.layout, members, held: this.partitions });
    }
    const standingBy = this.loops.size === 0;
    if (standingBy && !this.standingBy) this.logger.log({ msg: 'another instance is projecting; standing by', consumer: this.s.projectorConsumer, partitions: this.layout, members });
    this.standingBy = standingBy;
  }

  private async relayout(count: number): Promise<void> {
    for (const index of [...this.loops.keys()]) await this.giveBack(index);
    if (this.layout !== 0 || count !== this.config.partitions) {
      this.logger.log({ msg: 'the active read-model generation sets the partitions', partitions: count, configured: this.config.partitions });
    }
    if (count !== this.config.partitions) {
      this.logger.warn({ msg: 'STEERLINE_PARTITIONS differs from the active generation; `npm run rebuild` builds one with the configured count', active: count, configured: this.config.partitions });
    }
    this.layout = count;
  }

  private async giveBack(index: number): Promise<void> {
    const loop = this.loops.get(index);
    if (!loop) return;
    await loop.stop();
    this.loops.delete(index);
    await this.locks.release(loop.lockKey);
  }

  /** Re-reads the checkpoint every partition reached while someone waits for one this instance cannot see move. */
  private pollWhileWaiting(): void {
    this.polling ??= (async () => {
      try {
        while (this.waiters.pending > 0) {
          const checkpoint = await this.globalCheckpoint().catch(() => this.waiters.position);
          this.waiters.advance(Math.max(this.waiters.position, checkpoint));
          if (this.waiters.pending > 0) await sleep(WAIT_POLL_MS);
        }
      } finally {
        this.polling = undefined;
      }
    })();
  }

  /** The stream sequence every partition covers (coveredThrough): their checkpoints, then the stream's last sequence. */
  private async globalCheckpoint(): Promise<number> {
    const { checkpoints } = await activeCheckpoints(this.dataSource, (g) => partitionNames(this.s.projectorConsumer, g.partitions));
    if (!filteredLayout(this.s, checkpoints.length)) return Math.min(...checkpoints);
    const lastSeq = (await (await this.manager()).streams.info(this.s.stream)).state.last_seq;
    return coveredThrough(this.coverage, this.s, checkpoints, lastSeq);
  }

  private async manager(): Promise<JetStreamManager> {
    this.jsm ??= await jetstreamManager(this.nc);
    return this.jsm;
  }
}

function lockKey(partition: string): string {
  return `steerline-projector:${partition}`;
}

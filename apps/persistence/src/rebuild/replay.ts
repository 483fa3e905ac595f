import { jetstream, jetstreamManager, DeliverPolicy, type Consumer, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { EntityManager } from 'typeorm';
import type { Subjects } from '@steerline/contracts';
import { decodeBatch, projectBatch, toLogMessage, type DecodedBatch } from '../projector/batch';
import { TableDeadLetters } from '../projector/dead-letters';
import { partitionNames } from '../projector/partitions';
import { useGeneration, type Generation } from '../read-models/generations';

/**
 * Events per batch (one fetch, one transaction). Bigger than the live
 * projector's: a replay is round trips end to end, and a batch's two
 * statements cost little more for 2 000 events than for 500.
 */
export const REPLAY_BATCH = 2_000;
const FETCH_EXPIRES_MS = 1_000;

/**
 * The log, read once from its start by an ordered consumer, applied batch by
 * batch to one generation. The next batch is fetched and decoded while the
 * previous one commits, so NATS, this process and PostgreSQL work at once.
 */
export class Replay {
  private consumer?: Consumer;
  private readonly deadLetters = new TableDeadLetters();
  messages = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly s: Subjects,
    private readonly generation: Generation,
    private readonly batchSize = REPLAY_BATCH,
  ) {}

  async open(): Promise<void> {
    this.consumer = await jetstream(this.nc).consumers.get(this.s.stream, { deliver_policy: DeliverPolicy.All });
  }

  async lastSeq(): Promise<number> {
    const jsm = await jetstreamManager(this.nc);
    return (await jsm.streams.info(this.s.stream)).state.last_seq;
  }

  /**
   * Applies batches until the checkpoint reaches `target`, each in a
   * transaction `inTransaction` provides (a new one per batch, or the switch's).
   * Stops early when the stream has nothing more (messages deleted at its end),
   * or before the next batch once `stop()` says so.
   */
  async catchUp(
    target: number,
    from: number,
    inTransaction: (apply: (db: EntityManager) => Promise<number>) => Promise<number>,
    opts: { stop?: () => boolean; onBatch?: (checkpoint: number) => void } = {},
  ): Promise<number> {
    let checkpoint = from;
    let fetchedTo = from;
    let committing: Promise<number> | undefined;
    const settle = async () => {
      if (!committing) return;
      checkpoint = await committing;
      committing = undefined;
      opts.onBatch?.(checkpoint);
    };
    try {
      while (fetchedTo < target && !opts.stop?.()) {
        const msgs = await this.fetch(Math.min(this.batchSize, target - fetchedTo));
        if (msgs.length === 0) break;
        fetchedTo = msgs[msgs.length - 1].seq;
        const batch = decodeBatch(msgs.map(toLogMessage));
        // One transaction at a time (the switch has only one): the previous commits while this batch was fetched.
        await settle();
        committing = inTransaction((db) => this.apply(db, batch));
        this.messages += msgs.length;
      }
    } finally {
      // Never leave a transaction behind, even when a fetch failed.
      await settle();
    }
    return checkpoint;
  }

  async close(): Promise<void> {
    await this.consumer?.delete().catch(() => undefined);
  }

  private async apply(db: EntityManager, batch: DecodedBatch): Promise<number> {
    await useGeneration(db, this.generation);
    // One replay covers every partition: each one's checkpoint moves with it.
    return (await projectBatch(db, partitionNames(this.s.projectorConsumer, this.generation.partitions), batch, this.deadLetters)).checkpoint;
  }

  private async fetch(max: number): Promise<JsMsg[]> {
    const messages = await this.consumer!.fetch({ max_messages: max, expires: FETCH_EXPIRES_MS });
    const out: JsMsg[] = [];
    for await (const m of messages) out.push(m);
    return out;
  }
}

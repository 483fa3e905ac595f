import { jetstream, jetstreamManager, DeliverPolicy, type Consumer, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Client } from 'pg';
import type { EntityManager } from 'typeorm';
import { SteerlineError, connectNats, subjects, type Subjects } from '@steerline/contracts';
import type { PersistenceConfig } from '../config';
import { openReadModels } from '../migrations/database';
import { decodeBatch, projectBatch, toLogMessage } from '../projector/batch';
import { TableDeadLetters } from '../projector/dead-letters';
import { countTroubles } from '../read-models/store';
import { activate, createGeneration, dropGeneration, inactiveGenerations, lockActiveForSwitch, useGeneration, type Generation } from '../read-models/generations';

const BATCH_MAX = 500;
const FETCH_EXPIRES_MS = 1_000;
/**
 * The switch catches up the last events inside the transaction that holds the
 * live projector off; the bulk phase runs until fewer than this many are left,
 * so that pause stays short however busy the log is.
 */
const SWITCH_WITHIN = 200;
const MAX_BULK_ROUNDS = 20;

export interface RebuildReport {
  generation: number;
  previous: number | undefined;
  /** The stream sequence the new generation reflected when it became active. */
  checkpoint: number;
  messages: number;
  deadLetters: number;
  stalledConversations: number;
  durationMs: number;
}

/**
 * Replays the whole log into a new read-model generation and makes it the
 * active one, while the service keeps running (blue/green):
 *
 * 1. a new schema is created from the one DDL function, and the log is
 *    projected into it from sequence 1 by the projector's own `projectBatch`,
 *    through an ordered consumer of its own;
 * 2. once it is close to the end of the stream, one transaction locks the
 *    active-generation row (waiting for the live projector's batch in flight
 *    and holding off the next), projects the rest up to the stream's last
 *    sequence, and switches the row;
 * 3. the live projector is notified, finds its batches refused by the other
 *    generation, and follows from the new checkpoint.
 *
 * The generation it replaces is kept until the next rebuild, for comparison
 * or to switch back by hand.
 */
export async function rebuildReadModels(config: PersistenceConfig, log: (record: Record<string, unknown>) => void = () => undefined): Promise<RebuildReport> {
  const started = Date.now();
  const s = subjects(config.prefix);
  const dataSource = await openReadModels(config.databaseUrl, 'steerline-rebuild');
  const lock = new Client({ connectionString: config.databaseUrl, application_name: 'steerline-rebuild-lock' });
  let nc: NatsConnection | undefined;
  let generation: Generation | undefined;
  let switched = false;
  try {
    await lock.connect();
    const { rows } = await lock.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [`steerline-rebuild:${s.projectorConsumer}`]);
    if (!rows[0]?.ok) throw new SteerlineError('unavailable', 'another rebuild of these read models is running');

    await dataSource.transaction(async (db) => {
      for (const old of await inactiveGenerations(db)) {
        await dropGeneration(db, old);
        log({ msg: 'dropped an inactive generation', generation: old.id });
      }
    });
    generation = await dataSource.transaction((db) => createGeneration(db));
    log({ msg: 'building a new read-model generation', generation: generation.id, schema: generation.schema });

    nc = await connectNats(config.natsUrl, 'steerline-rebuild');
    const replay = new Replay(nc, s, generation);
    await replay.open();
    let checkpoint = 0;
    for (let round = 0; round < MAX_BULK_ROUNDS; round++) {
      const target = await replay.lastSeq();
      if (target - checkpoint <= SWITCH_WITHIN) break;
      const before = checkpoint;
      checkpoint = await replay.catchUp(target, checkpoint, (apply) => dataSource.transaction(apply));
      log({ msg: 'replayed', generation: generation.id, checkpoint, lastSeq: target });
      // Nothing more to fetch although the stream's last sequence is further: its tail was deleted.
      if (checkpoint === before) break;
    }

    const built = generation;
    const result = await dataSource.transaction(async (db) => {
      const previous = await lockActiveForSwitch(db);
      // Everything up to the stream's end as of now, while no live batch can commit.
      const final = await replay.catchUp(await replay.lastSeq(), checkpoint, async (apply) => apply(db));
      await activate(db, built);
      return { previous, checkpoint: final };
    });
    switched = true;
    log({ msg: 'switched to the new read-model generation', generation: generation.id, previous: result.previous, checkpoint: result.checkpoint });
    await replay.close();

    const stats = await dataSource.transaction(async (db) => {
      await useGeneration(db, built);
      return countTroubles(db);
    });
    return { generation: generation.id, ...result, messages: replay.messages, ...stats, durationMs: Date.now() - started };
  } catch (err) {
    if (generation && !switched) {
      const failed = generation;
      await dataSource.transaction((db) => dropGeneration(db, failed)).catch(() => undefined);
    }
    throw err;
  } finally {
    await nc?.close().catch(() => undefined);
    await lock.end().catch(() => undefined);
    await dataSource.destroy().catch(() => undefined);
  }
}

/** The log, read once from its start by an ordered consumer, applied batch by batch to one generation. */
class Replay {
  private consumer?: Consumer;
  private readonly deadLetters = new TableDeadLetters();
  messages = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly s: Subjects,
    private readonly generation: Generation,
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
   * Stops early when the stream has nothing more (messages deleted at its end).
   */
  async catchUp(target: number, from: number, inTransaction: (apply: (db: EntityManager) => Promise<number>) => Promise<number>): Promise<number> {
    let checkpoint = from;
    while (checkpoint < target) {
      const msgs = await this.fetch(Math.min(BATCH_MAX, target - checkpoint));
      if (msgs.length === 0) break;
      const batch = decodeBatch(msgs.map(toLogMessage));
      checkpoint = await inTransaction(async (db) => {
        await useGeneration(db, this.generation);
        return (await projectBatch(db, this.s.projectorConsumer, batch, this.deadLetters)).checkpoint;
      });
      this.messages += msgs.length;
    }
    return checkpoint;
  }

  async close(): Promise<void> {
    await this.consumer?.delete().catch(() => undefined);
  }

  private async fetch(max: number): Promise<JsMsg[]> {
    const messages = await this.consumer!.fetch({ max_messages: max, expires: FETCH_EXPIRES_MS });
    const out: JsMsg[] = [];
    for await (const m of messages) out.push(m);
    return out;
  }
}


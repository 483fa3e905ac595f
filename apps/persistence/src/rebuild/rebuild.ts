import type { NatsConnection } from '@nats-io/transport-node';
import { Client } from 'pg';
import type { EntityManager } from 'typeorm';
import { SteerlineError, subjects } from '@steerline/contracts';
import { connectNats } from '@steerline/runtime';
import type { PersistenceConfig } from '../config';
import { openReadModels } from '../migrations/database';
import { countTroubles } from '../read-models/store';
import { abandonGeneration, activate, createGeneration, dropGeneration, inactiveGenerations, lockActiveForSwitch, useGeneration, type Generation } from '../read-models/generations';
import { filteredLayout } from '../projector/partitions';
import { Replay } from './replay';
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

export interface RebuildOptions {
  log?: (record: Record<string, unknown>) => void;
  /** After every batch: the stream sequence replayed so far, and the last one the rebuild is heading for. */
  onProgress?: (checkpoint: number, lastSeq: number) => void;
  /**
   * Aborting it before the switch stops the replay after the batch in flight,
   * marks the half-built generation `abandoned` and rejects with `RebuildInterrupted`;
   * the active generation is never touched. Once the switch has begun it completes.
   */
  signal?: AbortSignal;
  /** Events per batch of the replay (REPLAY_BATCH unless given). */
  batchSize?: number;
}

/** The rebuild was asked to stop (Ctrl-C) before its switch. */
export class RebuildInterrupted extends Error {
  constructor(readonly generation: number) {
    super(`rebuild interrupted; generation ${generation} is marked abandoned and the active generation still serves`);
  }
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
 * or to switch back by hand. A rebuild that stops before its switch (aborted
 * through `opts.signal`, or failed) leaves its own generation `abandoned`;
 * the next rebuild drops it with the other inactive ones.
 */
export async function rebuildReadModels(config: PersistenceConfig, opts: RebuildOptions = {}): Promise<RebuildReport> {
  const log = opts.log ?? (() => undefined);
  const stop = () => opts.signal?.aborted === true;
  const started = Date.now();
  const s = subjects(config.prefix, { subjectPartitions: config.subjectPartitions });
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
    generation = await dataSource.transaction((db) => createGeneration(db, config.partitions));
    // Its partitions read only their own subjects once it is active when the engines write as many partition tokens.
    log({ msg: 'building a new read-model generation', generation: generation.id, schema: generation.schema, partitions: generation.partitions, ownSubjects: filteredLayout(s, generation.partitions) });

    nc = await connectNats(config.natsUrl, 'steerline-rebuild');
    const replay = new Replay(nc, s, generation, opts.batchSize);
    await replay.open();
    // Nothing reads this generation yet, and its rows and checkpoint commit together: a batch
    // lost to a database crash is lost consistently, and that crash ends the rebuild anyway.
    // So the bulk phase does not wait for each commit's flush to disk; the switch does.
    const inBulkTransaction = (apply: (db: EntityManager) => Promise<number>) =>
      dataSource.transaction(async (db) => {
        await db.query('SET LOCAL synchronous_commit = off');
        return apply(db);
      });
    let checkpoint = 0;
    for (let round = 0; round < MAX_BULK_ROUNDS; round++) {
      const target = await replay.lastSeq();
      if (target - checkpoint <= SWITCH_WITHIN) break;
      const before = checkpoint;
      opts.onProgress?.(checkpoint, target);
      checkpoint = await replay.catchUp(target, checkpoint, inBulkTransaction, { stop, onBatch: (c) => opts.onProgress?.(c, target) });
      if (stop()) throw new RebuildInterrupted(generation.id);
      log({ msg: 'replayed', generation: generation.id, checkpoint, lastSeq: target });
      // Nothing more to fetch although the stream's last sequence is further: its tail was deleted.
      if (checkpoint === before) break;
    }

    if (stop()) throw new RebuildInterrupted(generation.id);
    const built = generation;
    const result = await dataSource.transaction(async (db) => {
      const previous = await lockActiveForSwitch(db);
      // Everything up to the stream's end as of now, while no live batch can commit.
      const last = await replay.lastSeq();
      const final = await replay.catchUp(last, checkpoint, async (apply) => apply(db));
      opts.onProgress?.(final, last);
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
      // Marked, not dropped: a drop of a large schema would hold up an interrupted process; the next rebuild drops it.
      const failed = generation;
      await dataSource.transaction((db) => abandonGeneration(db, failed)).catch(() => undefined);
      log({ msg: 'abandoned the half-built read-model generation', generation: failed.id });
    }
    throw err;
  } finally {
    await nc?.close().catch(() => undefined);
    await lock.end().catch(() => undefined);
    await dataSource.destroy().catch(() => undefined);
  }
}

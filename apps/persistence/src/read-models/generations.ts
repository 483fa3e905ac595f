import { Logger } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DDL_VERSION, generationDdl, generationSchema, quoteIdentifier } from './schema';

/**
 * The read models live in one PostgreSQL schema per generation (`rm_<id>`);
 * the single row of `projection_active` names the one queries read and the
 * projector writes. A rebuild fills a new generation from the log and switches
 * that row in one transaction (blue/green).
 */
export interface Generation {
  id: number;
  schema: string;
  ddlVersion: number;
  /** How many partitions project it (fixed when it is created): one checkpoint, consumer and lock each. */
  partitions: number;
}

/** Told to the live projector when a rebuild switched generations, so it follows at once. */
export const GENERATION_CHANNEL = 'steerline_projection_generation';

interface GenerationRow {
  id: number;
  schema_name: string;
  ddl_version: number;
  partitions: number;
}

const toGeneration = (r: GenerationRow): Generation => ({ id: r.id, schema: r.schema_name, ddlVersion: r.ddl_version, partitions: r.partitions });

/**
 * Points the rest of the transaction at the generation's tables: every
 * unqualified table name (TypeORM's entities, the projector's statements)
 * resolves there. Transaction-local, so a pooled connection never keeps it.
 */
export async function useGeneration(db: EntityManager, generation: Generation): Promise<void> {
  await db.query(`SELECT set_config('search_path', $1, true)`, [quoteIdentifier(generation.schema)]);
}

/** The active generation, with the transaction pointed at it (one round trip): what readers use. */
export async function activeGeneration(db: EntityManager): Promise<Generation> {
  const rows: GenerationRow[] = await db.query(
    `SELECT g.id, g.schema_name, g.ddl_version, g.partitions, set_config('search_path', quote_ident(g.schema_name), true) AS search_path
     FROM public.projection_active a JOIN public.projection_generations g ON g.id = a.generation`,
  );
  if (rows.length === 0) throw new Error('no active read-model generation: the database was not initialised by the persistence service');
  return toGeneration(rows[0]);
}

/**
 * For a writer that knows which generation it projects into: share-locks the
 * `projection_active` row until the transaction ends, points the transaction
 * at `expected`, and returns the id that is actually active, in one round
 * trip. The caller must not write when the two differ.
 *
 * The lock means a rebuild's switch, which needs the row exclusively, cannot
 * happen under a batch. It is taken on that one row so that, when it waited
 * for a switch, PostgreSQL hands back the row as the switch left it (a join
 * would re-check the old generation and return nothing).
 */
export async function lockGeneration(db: EntityManager, expected: Generation): Promise<number> {
  const rows: { generation: number }[] = await db.query(
    `SELECT generation, set_config('search_path', $1, true) FROM public.projection_active FOR SHARE`,
    [quoteIdentifier(expected.schema)],
  );
  if (rows.length === 0) throw new Error('no active read-model generation');
  return rows[0].generation;
}

/** A new, empty generation in state `building`, projected by `partitions` partitions: its schema and tables exist, nothing reads them yet. */
export async function createGeneration(db: EntityManager, partitions = 1): Promise<Generation> {
  // The table lock makes concurrent creators take turns for the next id.
  await db.query('LOCK TABLE public.projection_generations IN EXCLUSIVE MODE');
  const [{ next }]: { next: number }[] = await db.query('SELECT coalesce(max(id), 0) + 1 AS next FROM public.projection_generations');
  const generation: Generation = { id: next, schema: generationSchema(next), ddlVersion: DDL_VERSION, partitions };
  await db.query(`INSERT INTO public.projection_generations (id, schema_name, ddl_version, partitions, status) VALUES ($1, $2, $3, $4, 'building')`, [
    generation.id,
    generation.schema,
    generation.ddlVersion,
    generation.partitions,
  ]);
  for (const statement of generationDdl(generation.schema)) await db.query(statement);
  return generation;
}

/**
 * Makes `generation` the one queries read, in the caller's transaction. The
 * caller holds `projection_active` exclusively (see `lockActiveForSwitch`);
 * the notification is delivered when the transaction commits.
 */
export async function activate(db: EntityManager, generation: Generation): Promise<void> {
  await db.query(`UPDATE public.projection_generations SET status = 'built', built_at = now() WHERE id = $1`, [generation.id]);
  await db.query(
    `INSERT INTO public.projection_active (singleton, generation, activated_at) VALUES (true, $1, now())
     ON CONFLICT (singleton) DO UPDATE SET generation = EXCLUDED.generation, activated_at = EXCLUDED.activated_at`,
    [generation.id],
  );
  await db.query('SELECT pg_notify($1, $2)', [GENERATION_CHANNEL, String(generation.id)]);
}

/** Waits for the live projector's batch in flight, then keeps it from committing another until the transaction ends. */
export async function lockActiveForSwitch(db: EntityManager): Promise<number | undefined> {
  const rows: { generation: number }[] = await db.query('SELECT generation FROM public.projection_active FOR UPDATE');
  return rows[0]?.generation;
}

/** Every generation but the active one: the one a rebuild retired, or one a failed rebuild left behind. */
export async function inactiveGenerations(db: EntityManager): Promise<Generation[]> {
  const rows: GenerationRow[] = await db.query(
    `SELECT id, schema_name, ddl_version, partitions FROM public.projection_generations
     WHERE id NOT IN (SELECT generation FROM public.projection_active) ORDER BY id`,
  );
  return rows.map(toGeneration);
}

/** Marks a generation a rebuild gave up on; the next rebuild drops it with the other inactive ones. */
export async function abandonGeneration(db: EntityManager, generation: Generation): Promise<void> {
  await db.query(`UPDATE public.projection_generations SET status = 'abandoned' WHERE id = $1 AND status = 'building'`, [generation.id]);
}

export async function dropGeneration(db: EntityManager, generation: Generation): Promise<void> {
  await db.query(`DROP SCHEMA IF EXISTS ${quoteIdentifier(generation.schema)} CASCADE`);
  await db.query('DELETE FROM public.projection_generations WHERE id = $1', [generation.id]);
}

/**
 * Gives a fresh database its first generation. Runs under the migration lock,
 * so concurrent instances starting at once create exactly one.
 */
export async function ensureActiveGeneration(dataSource: DataSource, partitions = 1): Promise<Generation> {
  return dataSource.transaction(async (db) => {
    const exists: unknown[] = await db.query('SELECT 1 FROM public.projection_active');
    if (exists.length === 0) {
      const generation = await createGeneration(db, partitions);
      await activate(db, generation);
      new Logger('ReadModels').log({ msg: 'created the first read-model generation; the projector fills it from the start of the log', generation: generation.id });
    }
    const generation = await activeGeneration(db);
    if (generation.ddlVersion < DDL_VERSION) {
      // Tables of an older shape cannot take this version's rows: start a generation of the current shape,
      // which the projector fills from the start of the log (`npm run rebuild` does the same without the gap).
      const next = await createGeneration(db, partitions);
      await activate(db, next);
      new Logger('ReadModels').warn({
        msg: 'the active read models were built by an older version of their schema; a new generation is filled from the start of the log',
        generation: next.id,
        replaced: generation.id,
        built: generation.ddlVersion,
        current: DDL_VERSION,
      });
      return next;
    }
    if (generation.ddlVersion > DDL_VERSION) {
      new Logger('ReadModels').warn({
        msg: 'the active read models were built by a newer version of their schema; upgrade this service',
        generation: generation.id,
        built: generation.ddlVersion,
        current: DDL_VERSION,
      });
    }
    return generation;
  });
}

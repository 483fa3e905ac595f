import type { MigrationInterface, QueryRunner } from 'typeorm';
import { InitialSchema1767225600000 } from './1767225600000-initial-schema';

/**
 * Moves the read models into generations (see read-models/generations.ts):
 * this migration creates the bookkeeping; the tables of each generation are
 * created by code from one DDL function, the first generation at start-up.
 *
 * The read-model tables of the initial schema are dropped, not moved: the log
 * is the source of truth, and the first generation is filled from its start,
 * which is what a rebuild does anyway. Only derived data is lost.
 */
export class ReadModelGenerations1767312000000 implements MigrationInterface {
  name = 'ReadModelGenerations1767312000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE public.projection_generations (
        id int PRIMARY KEY,
        schema_name text NOT NULL UNIQUE,
        ddl_version int NOT NULL,
        status text NOT NULL CHECK (status IN ('building', 'built')),
        created_at timestamptz NOT NULL DEFAULT now(),
        built_at timestamptz
      )`);
    // One row: the generation queries read and the projector writes. Switching it is a rebuild's last step.
    await db.query(`
      CREATE TABLE public.projection_active (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        generation int NOT NULL REFERENCES public.projection_generations (id),
        activated_at timestamptz NOT NULL DEFAULT now()
      )`);
    for (const table of ['checkpoints', 'steers', 'messages', 'turns', 'conversations']) await db.query(`DROP TABLE IF EXISTS public.${table}`);
  }

  async down(db: QueryRunner): Promise<void> {
    const schemas: { schema_name: string }[] = await db.query('SELECT schema_name FROM public.projection_generations');
    await db.query('DROP TABLE public.projection_active');
    await db.query('DROP TABLE public.projection_generations');
    for (const { schema_name } of schemas) await db.query(`DROP SCHEMA IF EXISTS "${schema_name.replace(/"/g, '""')}" CASCADE`);
    // Back to the initial schema's empty tables; the projector refills them from the log.
    await new InitialSchema1767225600000().up(db);
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The read models live in generations (see read-models/generations.ts): this
 * migration creates the bookkeeping; the tables of each generation are created
 * by code from one DDL function (read-models/schema.ts), the first generation
 * at start-up, so a rebuild and a fresh database build them the same way.
 */
export class InitialSchema1767312000000 implements MigrationInterface {
  name = 'InitialSchema1767312000000';

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
  }

  async down(db: QueryRunner): Promise<void> {
    const schemas: { schema_name: string }[] = await db.query('SELECT schema_name FROM public.projection_generations');
    await db.query('DROP TABLE public.projection_active');
    await db.query('DROP TABLE public.projection_generations');
    for (const { schema_name } of schemas) await db.query(`DROP SCHEMA IF EXISTS "${schema_name.replace(/"/g, '""')}" CASCADE`);
  }
}

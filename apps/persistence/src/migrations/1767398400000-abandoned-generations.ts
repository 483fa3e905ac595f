import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A rebuild that stops before its switch (Ctrl-C, an error) marks its
 * half-built generation `abandoned` instead of dropping it on the way out: a
 * drop of a large schema is slow and an interrupted process should exit at
 * once. The next rebuild drops it with the other inactive generations.
 */
export class AbandonedGenerations1767398400000 implements MigrationInterface {
  name = 'AbandonedGenerations1767398400000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE public.projection_generations DROP CONSTRAINT projection_generations_status_check');
    await db.query(`ALTER TABLE public.projection_generations ADD CONSTRAINT projection_generations_status_check CHECK (status IN ('building', 'built', 'abandoned'))`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DELETE FROM public.projection_generations WHERE status = 'abandoned'`);
    await db.query('ALTER TABLE public.projection_generations DROP CONSTRAINT projection_generations_status_check');
    await db.query(`ALTER TABLE public.projection_generations ADD CONSTRAINT projection_generations_status_check CHECK (status IN ('building', 'built'))`);
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Partitioned projection: each generation records how many partitions its
 * checkpoints are kept for. It is fixed when the generation is created
 * (STEERLINE_PARTITIONS then), so every instance projecting it agrees;
 * generations from before partitions had one.
 */
export class GenerationPartitions1767657600000 implements MigrationInterface {
  name = 'GenerationPartitions1767657600000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE public.projection_generations ADD COLUMN partitions int NOT NULL DEFAULT 1 CHECK (partitions >= 1)');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE public.projection_generations DROP COLUMN partitions');
  }
}

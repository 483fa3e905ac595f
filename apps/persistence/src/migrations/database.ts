import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { databaseName } from '../config';
import { READ_MODEL_ENTITIES } from '../read-models/entities';
import { ensureActiveGeneration } from '../read-models/generations';
import { quoteIdentifier } from '../read-models/schema';
import { InitialSchema1767312000000 } from './1767312000000-initial-schema';
import { AbandonedGenerations1767398400000 } from './1767398400000-abandoned-generations';
import { GenerationPartitions1767657600000 } from './1767657600000-generation-partitions';

export { quoteIdentifier };

/** Every migration, oldest first; a new one is appended here. */
export const MIGRATIONS = [InitialSchema1767312000000, AbandonedGenerations1767398400000, GenerationPartitions1767657600000];

const INVALID_CATALOG_NAME = '3D000';
const DUPLICATE_DATABASE = '42P04';
const UNIQUE_VIOLATION = '23505';
// Serialises migrations when several instances start at once; migrations are not idempotent.
const MIGRATION_LOCK = 'steerline-persistence-migrations';

/** Creates the database DATABASE_URL names when it does not exist yet (docs/design.md §7). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const probe = new Client({ connectionString: databaseUrl });
  try {
    await probe.connect();
    return;
  } catch (err) {
    if (pgCode(err) !== INVALID_CATALOG_NAME) throw err;
  } finally {
    await probe.end().catch(() => undefined);
  }
  // Only a missing database needs the maintenance database, so a managed
  // server that hides `postgres` still works when the database exists.
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${quoteIdentifier(databaseName(databaseUrl))}`);
  } catch (err) {
    // Another instance created it in the meantime.
    if (pgCode(err) !== DUPLICATE_DATABASE && pgCode(err) !== UNIQUE_VIOLATION) throw err;
  } finally {
    await client.end();
  }
}

/**
 * Opens the read-model database, brings its schema up to date and makes sure a
 * read-model generation is active (a first one is created with `partitions`).
 */
export async function openReadModels(databaseUrl: string, applicationName = 'steerline-persistence', partitions = 1): Promise<DataSource> {
  await ensureDatabase(databaseUrl);
  const dataSource = new DataSource({
    type: 'postgres',
    url: databaseUrl,
    applicationName,
    entities: READ_MODEL_ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: true,
    migrationsTransactionMode: 'all',
    synchronize: false,
    logging: false,
  });
  const lock = new Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock(hashtext($1))', [MIGRATION_LOCK]);
    await dataSource.initialize();
    await ensureActiveGeneration(dataSource, partitions);
  } catch (err) {
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
    throw err;
  } finally {
    // Ending the session releases the advisory lock.
    await lock.end();
  }
  return dataSource;
}

function pgCode(err: unknown): string | undefined {
  return (err as { code?: string } | null)?.code;
}

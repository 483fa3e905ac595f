/**
 * `npm run rebuild`: replays the whole event log into a fresh read-model
 * generation and switches queries to it (blue/green) while the service keeps
 * running. Configured like the persistence service (NATS_URL, DATABASE_URL,
 * STEERLINE_PREFIX). Exit code 0 once the new generation is active, 1 when
 * the rebuild failed (the active generation is then left as it was).
 */
import { ConsoleLogger, Logger } from '@nestjs/common';
import { loadPersistenceConfig } from '../apps/persistence/src/config';
import { rebuildReadModels } from '../apps/persistence/src/rebuild/rebuild';

async function main(): Promise<number> {
  const logger = new ConsoleLogger('rebuild', { json: true });
  Logger.overrideLogger(logger);
  const config = loadPersistenceConfig(process.env);
  const report = await rebuildReadModels(config, (record) => logger.log(record));
  logger.log({ msg: 'rebuild complete', ...report });
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(JSON.stringify({ level: 'fatal', context: 'rebuild', message: 'rebuild failed', error: err instanceof Error ? err.message : String(err) }));
    process.exit(1);
  },
);

/**
 * `npm run rebuild`: replays the whole event log into a fresh read-model
 * generation and switches queries to it (blue/green) while the service keeps
 * running. Configured like the persistence service (NATS_URL, DATABASE_URL,
 * STEERLINE_PREFIX). Shows its progress (a bar in a terminal, a JSON line
 * every few seconds otherwise). Exit code 0 once the new generation is
 * active, 1 when the rebuild failed, 130 when interrupted (Ctrl-C or SIGTERM)
 * before the switch; in both the active generation is left as it was and the
 * half-built one is marked abandoned, dropped by the next rebuild.
 */
import { ConsoleLogger, Logger } from '@nestjs/common';
import { loadPersistenceConfig } from '../apps/persistence/src/config';
import { RebuildInterrupted, rebuildReadModels } from '../apps/persistence/src/rebuild/rebuild';
import { Progress } from './lib/progress';

async function main(): Promise<number> {
  const logger = new ConsoleLogger('rebuild', { json: true });
  Logger.overrideLogger(logger);
  const config = loadPersistenceConfig(process.env);
  const progress = new Progress({ label: 'rebuild', json: true });
  const interrupt = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (interrupt.signal.aborted) process.exit(130); // asked twice: leave at once (the next rebuild drops what is left)
      progress.stop();
      logger.warn({ msg: `${signal}: stopping after the batch in flight; the active generation keeps serving` });
      interrupt.abort();
    });
  }
  const log = (record: Record<string, unknown>) => {
    progress.stop();
    logger.log(record);
  };
  try {
    const batchSize = process.env.STEERLINE_REBUILD_BATCH ? Number(process.env.STEERLINE_REBUILD_BATCH) : undefined;
    if (batchSize !== undefined && !(Number.isInteger(batchSize) && batchSize > 0)) throw new Error('STEERLINE_REBUILD_BATCH must be a positive integer');
    const report = await rebuildReadModels(config, { log, batchSize, signal: interrupt.signal, onProgress: (done, total) => progress.update(done, total) });
    progress.stop();
    logger.log({ msg: 'rebuild complete', ...report });
    return 0;
  } catch (err) {
    progress.stop();
    if (!(err instanceof RebuildInterrupted)) throw err;
    logger.warn({ msg: 'rebuild interrupted', generation: err.generation, detail: err.message });
    return 130;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(JSON.stringify({ level: 'fatal', context: 'rebuild', message: 'rebuild failed', error: err instanceof Error ? err.message : String(err) }));
    process.exit(1);
  },
);

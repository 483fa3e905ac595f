import { ConsoleLogger } from '@nestjs/common';
import { installProcessGuard } from '@steerline/contracts';
import { startPersistence } from './app';
import { loadPersistenceConfig } from './config';

const SHUTDOWN_TIMEOUT_MS = 15_000;

installProcessGuard('persistence');

async function main(): Promise<void> {
  const logger = new ConsoleLogger('persistence', { json: true });
  let config;
  try {
    config = loadPersistenceConfig(process.env);
  } catch (err) {
    logger.fatal((err as Error).message);
    process.exit(1);
  }
  const app = await startPersistence(config, { logger });
  logger.log({ msg: 'persistence ready', prefix: config.prefix });

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.log({ msg: 'shutting down', signal });
    // A hung connection must not keep the process alive past its orchestrator's patience.
    setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ msg: 'shutdown failed', error: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  console.error(JSON.stringify({ level: 'fatal', context: 'persistence', message: 'start-up failed', error: err instanceof Error ? err.message : String(err) }));
  process.exit(1);
});

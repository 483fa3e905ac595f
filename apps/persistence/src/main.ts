import { collectDefaultMetrics } from 'prom-client';
import { createLogger, installProcessGuard, logLevelFor, listenForMetrics, nestLogger, type Logger } from '@steerline/runtime';
import { startPersistence } from './app';
import { loadPersistenceConfig } from './config';

const SHUTDOWN_TIMEOUT_MS = 15_000;

installProcessGuard('persistence');

async function main(root: Logger): Promise<void> {
  const logger = root.child({ context: 'persistence' });
  // Start and stop lines are written at every level: `npm start` and operators wait for them.
  const lifecycle = root.child({ context: 'persistence' }, { level: 'info' });
  const config = loadPersistenceConfig(process.env);
  // Listening before the service starts: a taken port stops it before it projects anything.
  const metrics = await listenForMetrics(config.metrics);
  // The line `npm start` points to when METRICS_PORT=0 picked a free port (as the engine writes it).
  lifecycle.info({ url: metrics.url ?? null }, metrics.url ? `persistence metrics at ${metrics.url}` : 'persistence metrics off (METRICS_PORT=off)');
  const app = await startPersistence(config, { logger: nestLogger(root) });
  collectDefaultMetrics({ register: app.metrics.registry, prefix: 'steerline_persistence_' });
  metrics.show(app.metrics.registry);
  lifecycle.info({ prefix: config.prefix, metrics: metrics.url ?? null }, 'persistence ready');

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    lifecycle.info({ signal }, 'shutting down');
    // A hung connection must not keep the process alive past its orchestrator's patience.
    setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
    Promise.all([app.close(), metrics.close()]).then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

let root: Logger;
try {
  root = createLogger({ level: logLevelFor(process.env.STEERLINE_LOG_LEVEL) });
} catch (err) {
  createLogger().fatal({ context: 'persistence' }, (err as Error).message);
  process.exit(1);
}
main(root).catch((err: unknown) => {
  // A bad variable is the whole story; anything else gets its stack. pino writes the line before the process ends.
  const config = err instanceof Error && err.message.startsWith('invalid');
  root.fatal({ context: 'persistence', ...(config ? {} : { err }) }, config ? (err as Error).message : 'start-up failed');
  process.exit(1);
});

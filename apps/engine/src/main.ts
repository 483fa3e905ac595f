import { collectDefaultMetrics } from 'prom-client';
import { createLogger, listenForMetrics, logLevelFor, nestLogger } from '@steerline/runtime';
import { loadEngineConfig } from './config';
import { installProcessGuard } from '@steerline/runtime';
import { startEngine } from './app';

installProcessGuard('engine');

async function main(): Promise<void> {
  const root = createLogger({ level: logLevelFor(process.env.STEERLINE_LOG_LEVEL) });
  // Start and stop lines are written at every level: `npm start` and operators wait for them.
  const lifecycle = root.child({ context: 'Engine' }, { level: 'info' });
  const config = loadEngineConfig(process.env);
  // Listening before the engine starts: a taken port stops it before it takes any turn.
  const metrics = await listenForMetrics(config.metrics);
  lifecycle.info({ url: metrics.url ?? null }, metrics.url ? `engine metrics at ${metrics.url}` : 'engine metrics off (METRICS_PORT=off)');
  const engine = await startEngine(config, { logger: nestLogger(root) });
  collectDefaultMetrics({ register: engine.service.metrics.registry, prefix: 'steerline_engine_' });
  metrics.show(engine.service.metrics.registry);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    lifecycle.info({ signal }, `engine stopping on ${signal}`);
    Promise.all([engine.close(), metrics.close()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err) => {
  // pino writes what is queued before the process ends.
  createLogger().error({ context: 'Engine', err }, `engine failed to start: ${(err as Error).message}`);
  process.exit(1);
});

import { createLogger, logLevelFor, nestLogger } from '@steerline/contracts';
import { loadEngineConfig } from './config';
import { installProcessGuard } from '@steerline/contracts';
import { startEngine } from './app';

installProcessGuard('engine');

async function main(): Promise<void> {
  const root = createLogger({ level: logLevelFor(process.env.STEERLINE_LOG_LEVEL) });
  // Start and stop lines are written at every level: `npm start` and operators wait for them.
  const lifecycle = root.child({ context: 'Engine' }, { level: 'info' });
  const engine = await startEngine(loadEngineConfig(process.env), { logger: nestLogger(root) });
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    lifecycle.info({ signal }, `engine stopping on ${signal}`);
    engine.close().then(
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

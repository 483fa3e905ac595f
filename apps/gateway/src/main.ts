import { installProcessGuard } from '@steerline/contracts';
import { startGateway } from './app';
import { ConfigError, loadGatewayConfig } from './config';
import { jsonLogger, logLevelsFor } from './logger';

// A second signal, or a shutdown that hangs, ends the process anyway.
const SHUTDOWN_GRACE_MS = 15_000;

installProcessGuard('gateway');

const logger = jsonLogger(logLevelsFor(process.env.STEERLINE_LOG_LEVEL));
// Start and stop lines are written at every level: `npm start` and operators wait for them.
const lifecycle = jsonLogger();

async function main(): Promise<void> {
  const config = loadGatewayConfig(process.env);
  const gateway = await startGateway(config, { logger });
  lifecycle.log('gateway ready', { url: gateway.url }, 'gateway');

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    lifecycle.log('gateway stopping', { signal }, 'gateway');
    setTimeout(() => {
      logger.error('gateway did not stop in time', { graceMs: SHUTDOWN_GRACE_MS }, 'gateway');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    gateway.close().then(
      () => lifecycle.log('gateway stopped', 'gateway'),
      (err: unknown) => {
        logger.error('gateway stopped with an error', err, 'gateway');
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) logger.error(err.message, 'gateway');
  else logger.error('gateway failed to start', err, 'gateway');
  process.exit(1);
});

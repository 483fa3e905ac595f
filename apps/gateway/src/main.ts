import { installProcessGuard, type Logger } from '@steerline/runtime';
import { startGateway } from './app';
import { ConfigError, loadGatewayConfig } from './config';
import { gatewayLogger } from './logger';

// A second signal, or a shutdown that hangs, ends the process anyway.
const SHUTDOWN_GRACE_MS = 15_000;

installProcessGuard('gateway');

async function main(): Promise<void> {
  const root = gatewayLogger(process.env.STEERLINE_LOG_LEVEL);
  const logger = root.child({ context: 'gateway' });
  // Start and stop lines are written at every level: `npm start` and operators wait for them.
  const lifecycle = root.child({ context: 'gateway' }, { level: 'info' });
  const config = loadGatewayConfig(process.env);
  const gateway = await startGateway(config, { logger: root });
  lifecycle.info({ url: gateway.url }, 'gateway ready');

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    lifecycle.info({ signal }, 'gateway stopping');
    setTimeout(() => {
      logger.error({ graceMs: SHUTDOWN_GRACE_MS }, 'gateway did not stop in time');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    gateway.close().then(
      () => lifecycle.info('gateway stopped'),
      (err: unknown) => {
        logger.error({ err }, 'gateway stopped with an error');
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => failed(err));

/** Start-up failed (a bad variable included): one error line, exit 1; pino writes it before the process ends. */
function failed(err: unknown): never {
  let logger: Logger;
  try {
    logger = gatewayLogger(process.env.STEERLINE_LOG_LEVEL);
  } catch {
    logger = gatewayLogger(); // STEERLINE_LOG_LEVEL itself is what is wrong
  }
  const log = logger.child({ context: 'gateway' });
  if (err instanceof ConfigError || (err instanceof Error && err.message.startsWith('invalid configuration'))) log.error(err.message);
  else log.error({ err }, 'gateway failed to start');
  process.exit(1);
}

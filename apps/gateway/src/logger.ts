import type { LogLevel } from '@nestjs/common';
import { createLogger, logLevelFor, type Logger } from '@steerline/runtime';
import type { DestinationStream } from 'pino';

/**
 * The gateway's pino logger (see libs/runtime logging.ts): one JSON object
 * per line on standard output, asynchronously; readable lines on a terminal.
 * `level` is `STEERLINE_LOG_LEVEL`'s value; `warn` drops the per-request line.
 */
export function gatewayLogger(level?: string, destination?: DestinationStream): Logger {
  return createLogger({ level: logLevelFor(level), destination });
}

/**
 * A logger that writes only the given Nest levels and worse, e.g.
 * `jsonLogger(['error'])` for a gateway started inside a test.
 */
export function jsonLogger(logLevels?: LogLevel[], destination?: DestinationStream): Logger {
  const least = logLevels && (['verbose', 'debug', 'log', 'warn', 'error', 'fatal'] as const).find((l) => logLevels.includes(l));
  return gatewayLogger(least === 'fatal' ? 'error' : least, destination);
}

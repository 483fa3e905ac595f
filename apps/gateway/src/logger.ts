import { ConsoleLogger, type LogLevel } from '@nestjs/common';

/**
 * One JSON object per line. Call as `log('what happened', { steerId, … })`:
 * the fields land at the top level of the record next to `message`, which is
 * what `npm start` reads (`message` containing "gateway ready", and `url`).
 */
export function jsonLogger(logLevels?: LogLevel[]): ConsoleLogger {
  return new ConsoleLogger({ json: true, flattenParams: true, ...(logLevels ? { logLevels } : {}) });
}

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/**
 * `STEERLINE_LOG_LEVEL` (error, warn, log, debug, verbose; default log): the
 * least severe level written. `warn` drops the per-request line, which costs a
 * synchronous write per request on a busy gateway.
 */
export function logLevelsFor(level: string | undefined): LogLevel[] | undefined {
  if (!level) return undefined;
  const upTo = LEVELS.indexOf(level as LogLevel);
  if (upTo < 0) throw new Error(`invalid gateway configuration: STEERLINE_LOG_LEVEL must be one of ${LEVELS.slice(1).join(', ')}`);
  return LEVELS.slice(0, upTo + 1);
}

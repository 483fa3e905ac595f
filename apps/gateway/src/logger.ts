import { ConsoleLogger, type LogLevel } from '@nestjs/common';

/**
 * One JSON object per line. Call as `log('what happened', { steerId, … })`:
 * the fields land at the top level of the record next to `message`, which is
 * what `npm start` reads (`message` containing "gateway ready", and `url`).
 */
export function jsonLogger(logLevels?: LogLevel[]): ConsoleLogger {
  return new ConsoleLogger({ json: true, flattenParams: true, ...(logLevels ? { logLevels } : {}) });
}

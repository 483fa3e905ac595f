import type { LoggerService } from '@nestjs/common';
import { NativeLogger, type PinoLogger } from 'nestjs-pino';
import { pino, type DestinationStream, type Level, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger } from 'pino';

/**
 * The log every Steerline process writes: pino, one JSON object per line, the
 * text under `message` (not pino's `msg`) and the fields of a call at the top
 * level next to it: `log.info({ steerId }, 'steer accepted')`.
 */

/** `STEERLINE_LOG_LEVEL`'s values (Nest's names), with the pino level each one means. */
const LEVELS: Record<string, Level> = { error: 'error', warn: 'warn', log: 'info', debug: 'debug', verbose: 'trace' };
// pino's own names are accepted too: operators who know pino type `info`.
const ALIASES: Record<string, Level> = { ...LEVELS, fatal: 'fatal', info: 'info', trace: 'trace' };

/** `STEERLINE_LOG_LEVEL` (error, warn, log, debug, verbose; default log): the least severe level written. */
export function logLevelFor(value: string | undefined): Level {
  if (value === undefined || value === '') return 'info';
  const level = ALIASES[value];
  if (!level) throw new Error(`invalid configuration: STEERLINE_LOG_LEVEL must be one of ${Object.keys(LEVELS).join(', ')}`);
  return level;
}

let stdout: DestinationStream | undefined;

/**
 * Standard output, shared by every logger of the process so lines keep their
 * order. Not a terminal (a pipe, `npm start`, a log collector): asynchronous —
 * a write is handed to libuv's thread pool instead of blocking the event loop,
 * and lines logged while one is in flight go out together in the next, so a
 * busy gateway makes one system call per batch, not per request. Nothing is
 * held back on a timer: a warning goes out right behind the lines before it.
 * What is still queued is written synchronously on exit (pino registers that);
 * only a SIGKILL loses the lines of the write in flight.
 * A terminal: pino-pretty, one readable line per record, written synchronously.
 */
export function stdoutDestination(): DestinationStream {
  stdout ??= process.stdout.isTTY
    ? pretty({ ...PRETTY_OPTIONS, colorize: !process.env.NO_COLOR, sync: true })
    : pino.destination({ dest: 1, sync: false });
  return stdout;
}

/** How pino-pretty reads our records (used for a terminal here and by `npm start`). */
export const PRETTY_OPTIONS = {
  messageKey: 'message',
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname',
  // One line per record: the fields follow the message instead of one per line.
  singleLine: true,
} as const;

export interface LoggerOptions {
  /** Default `info`; see `logLevelFor`. */
  level?: Level | 'silent';
  /** Default `stdoutDestination()`; tests pass a stream that records the lines. */
  destination?: DestinationStream;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      messageKey: 'message',
      base: { pid: process.pid },
      // Labels ("info", "warn") rather than pino's numbers, so a line reads without a table.
      formatters: { level: (label) => ({ level: label }) },
    },
    opts.destination ?? stdoutDestination(),
  );
}

/**
 * Nest's `LoggerService` over a pino logger, for `NestFactory.create*({ logger })`
 * and every `new Logger(context)` in the apps. nestjs-pino's `NativeLogger`
 * keeps Nest's calling conventions (the last string is the context, an error's
 * stack comes after its message) and, with `flattenParams`, puts the fields of
 * `log('steer accepted', { steerId }, 'steers')` at the top level. It is handed
 * the app's own logger instead of nestjs-pino's process-wide root, so several
 * apps in one process (the tests) each keep theirs.
 */
export function nestLogger(logger: Logger): LoggerService {
  return new FlatNativeLogger(logger as unknown as PinoLogger, { nativeLogger: { flattenParams: true, structuredParams: true } });
}

class FlatNativeLogger extends NativeLogger {
  // `log({ msg: 'text', generation })` (or `message:`), the other convention in the apps: the text becomes the message.
  override log(message: unknown, ...params: unknown[]) {
    super.log(...withText(message, params));
  }
  override warn(message: unknown, ...params: unknown[]) {
    super.warn(...withText(message, params));
  }
  override error(message: unknown, ...params: unknown[]) {
    super.error(...withText(message, params));
  }
  // A level the logger does not write costs nothing: nestjs-pino would shape the record first and
  // pino drop it after (the gateway's `debug('steer answered', …)`, once per steer: issue 34).
  override debug(message: unknown, ...params: unknown[]) {
    if (this.writes('debug')) super.debug(...withText(message, params));
  }
  override verbose(message: unknown, ...params: unknown[]) {
    if (this.writes('trace')) super.verbose(message, ...params);
  }
  private writes(level: Level): boolean {
    return (this.logger as unknown as Logger).isLevelEnabled(level);
  }
}

function withText(message: unknown, params: unknown[]): [unknown, ...unknown[]] {
  if (message && typeof message === 'object' && !(message instanceof Error)) {
    const { msg, message: text, ...fields } = message as { msg?: unknown; message?: unknown };
    const said = typeof msg === 'string' ? msg : typeof text === 'string' ? text : undefined;
    // Nest appends the context last; the fields go before it so it stays the context.
    if (said !== undefined) return [said, { ...fields, ...(said === msg && text !== undefined ? { message: text } : {}) }, ...params];
  }
  return [message, ...params];
}

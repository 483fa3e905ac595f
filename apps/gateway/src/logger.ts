import { ConsoleLogger, type LogLevel } from '@nestjs/common';

/** How long a routine line may wait to be written together with the lines after it. */
const FLUSH_MS = 25;
/** Buffered bytes that are written at once, whatever the time. */
const FLUSH_BYTES = 64 * 1024;
const ROUTINE: ReadonlySet<LogLevel> = new Set(['log', 'debug', 'verbose']);

/**
 * The lines bound for one stream. A write to a pipe is synchronous on Linux and
 * wakes the reader (a log collector, `npm start`): one per request costs a busy
 * gateway a system call and a wake-up each. Routine lines are written together, at most
 * FLUSH_MS later; a warning or worse writes everything before it, then itself,
 * at once; so does the process's exit. A SIGKILL loses at most FLUSH_MS of
 * routine lines.
 */
class LineBuffer {
  private chunks: string[] = [];
  private bytes = 0;
  private timer?: NodeJS.Timeout;

  constructor(private readonly stream: NodeJS.WritableStream) {
    process.once('exit', () => this.flush());
  }

  write(line: string, now: boolean): void {
    this.chunks.push(line);
    this.bytes += line.length;
    if (now || this.bytes >= FLUSH_BYTES) return this.flush();
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS).unref();
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.chunks.length === 0) return;
    const text = this.chunks.join('');
    this.chunks = [];
    this.bytes = 0;
    this.stream.write(text);
  }
}

// One per stream, shared by every logger, so lines keep their order.
const buffers = { stdout: new LineBuffer(process.stdout), stderr: new LineBuffer(process.stderr) };

class BufferedJsonLogger extends ConsoleLogger {
  protected override printAsJson(message: unknown, options: Parameters<ConsoleLogger['getJsonLogObject']>[1]): void {
    const line = `${this.stringifyJsonLogObject(this.getJsonLogObject(message, options))}\n`;
    const stream = options.writeStreamType ?? 'stdout';
    // A warning or worse goes out now, after what is buffered on either stream.
    const urgent = !ROUTINE.has(options.logLevel);
    if (urgent) buffers[stream === 'stdout' ? 'stderr' : 'stdout'].flush();
    buffers[stream].write(line, urgent);
  }
}

/**
 * One JSON object per line. Call as `log('what happened', { steerId, … })`:
 * the fields land at the top level of the record next to `message`, which is
 * what `npm start` reads (`message` containing "gateway ready", and `url`).
 */
export function jsonLogger(logLevels?: LogLevel[]): ConsoleLogger {
  return new BufferedJsonLogger({ json: true, flattenParams: true, ...(logLevels ? { logLevels } : {}) });
}

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/**
 * `STEERLINE_LOG_LEVEL` (error, warn, log, debug, verbose; default log): the
 * least severe level written. `warn` drops the per-request line altogether.
 */
export function logLevelsFor(level: string | undefined): LogLevel[] | undefined {
  if (!level) return undefined;
  const upTo = LEVELS.indexOf(level as LogLevel);
  if (upTo < 0) throw new Error(`invalid gateway configuration: STEERLINE_LOG_LEVEL must be one of ${LEVELS.slice(1).join(', ')}`);
  return LEVELS.slice(0, upTo + 1);
}

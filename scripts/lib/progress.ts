/**
 * Progress of an operator tool over the event log (`npm run rebuild`,
 * `npm run audit`): in a terminal one line, redrawn in place, with events done
 * out of the total, the rate and the time left; otherwise (stdout not a
 * terminal, or CI=true) a plain line every few seconds, so a log file or CI
 * output shows the tool is alive without a flood of carriage returns.
 */
export interface ProgressOptions {
  label: string;
  stream?: NodeJS.WriteStream;
  env?: NodeJS.ProcessEnv;
  /** Between plain lines; the bar redraws at most every 100 ms. */
  everyMs?: number;
  /** Plain lines as JSON records (for tools whose other output is JSON). */
  json?: boolean;
  now?: () => number;
}

const BAR_WIDTH = 30;

export class Progress {
  readonly interactive: boolean;
  private readonly out: NodeJS.WriteStream;
  private readonly started: number;
  private readonly now: () => number;
  private readonly everyMs: number;
  private lastDraw = 0;
  private done = 0;
  private total = 0;
  private drawn = false;

  constructor(private readonly opts: ProgressOptions) {
    this.out = opts.stream ?? process.stdout;
    const env = opts.env ?? process.env;
    this.interactive = Boolean(this.out.isTTY) && env.CI !== 'true' && env.CI !== '1';
    this.now = opts.now ?? (() => Date.now());
    this.started = this.now();
    this.everyMs = this.interactive ? 100 : (opts.everyMs ?? 3_000);
    // The first line once there is a rate to show.
    this.lastDraw = this.started;
  }

  /** Where the work stands: `done` of `total` events. Cheap to call for every event. */
  update(done: number, total: number): void {
    this.done = done;
    this.total = Math.max(total, done);
    const t = this.now();
    if (t - this.lastDraw < this.everyMs) return;
    this.lastDraw = t;
    this.draw(t);
  }

  /** Clears the bar (a terminal) so the final summary starts on its own line. */
  stop(): void {
    if (this.interactive && this.drawn) this.out.write('\r\x1b[2K');
    this.drawn = false;
  }

  private draw(t: number): void {
    const seconds = (t - this.started) / 1000;
    const rate = seconds > 0 ? this.done / seconds : 0;
    const left = rate > 0 ? (this.total - this.done) / rate : undefined;
    const fraction = this.total > 0 ? this.done / this.total : 0;
    if (this.interactive) {
      const filled = Math.round(fraction * BAR_WIDTH);
      const bar = '█'.repeat(filled) + '░'.repeat(BAR_WIDTH - filled);
      this.out.write(`\r\x1b[2K${this.opts.label} ${bar} ${(fraction * 100).toFixed(0).padStart(3)}%  ${this.done}/${this.total} events  ${Math.round(rate)}/s  ${formatLeft(left)} left`);
      this.drawn = true;
    } else if (this.opts.json) {
      this.out.write(`${JSON.stringify({ msg: `${this.opts.label} progress`, done: this.done, total: this.total, perSecond: Math.round(rate), secondsLeft: left === undefined ? null : Math.round(left) })}\n`);
    } else {
      this.out.write(`${this.opts.label}: ${this.done}/${this.total} events (${(fraction * 100).toFixed(1)}%), ${Math.round(rate)}/s, ${formatLeft(left)} left\n`);
    }
  }
}

export function formatLeft(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

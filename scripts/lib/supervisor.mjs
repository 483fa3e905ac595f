// One supervised process, the way a process manager runs it: output prefixed
// line by line, readiness read from its JSON log, restarted with exponential
// backoff when it dies unexpectedly, given up on when it keeps dying.
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import readline from 'node:readline';
import { signalGroup, stopProcess } from './process.mjs';

const DEFAULT_BACKOFF = {
  initialMs: 500, // first restart delay, doubled on each quick death
  maxMs: 30_000,
  stableAfterMs: 30_000, // a run this long resets the delay and the count
  maxQuickRestarts: 8, // quick deaths in a row before giving up (~90 s of trying)
};

const seconds = (ms) => (ms < 1_000 ? `${ms} ms` : `${(ms / 1_000).toFixed(1)} s`);
const describeExit = ({ code, signal }) => (signal ? `signal ${signal}` : `code ${code}`);

/**
 * Events: 'ready' (record, { restarts }) each time the process logs a JSON line
 * that `isReady(record)` accepts; 'gave-up' () once it has died too often.
 */
export class Supervised extends EventEmitter {
  #child = null;
  #stopping = false;
  #restartTimer = null;
  #restarts = 0;
  #quickDeaths = 0;
  #delayMs;
  #startedAt = 0;

  constructor({ name, command, args = [], cwd, env, isReady, output, backoff = {} }) {
    super();
    Object.assign(this, { name, command, args, cwd, env, isReady, output });
    this.backoff = { ...DEFAULT_BACKOFF, ...backoff };
    this.#delayMs = this.backoff.initialMs;
  }

  start() {
    this.#startedAt = Date.now();
    // Its own process group: a terminal's Ctrl-C reaches only the supervisor,
    // which then stops the services in order.
    const child = spawn(this.command, this.args, { cwd: this.cwd, env: this.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.#child = child;
    // 'close' comes after the last line of output has been read.
    child.closed = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
    child.once('error', (error) => this.output.log(`${this.name}: could not start ${this.command}: ${error.message}`));
    this.#follow(child.stdout, 'stdout');
    this.#follow(child.stderr, 'stderr');
    child.closed.then((outcome) => this.#onExit(child, outcome));
  }

  #follow(stream, name) {
    readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      this.output.line(this.name, line, name);
      if (!line.startsWith('{')) return;
      let record;
      try {
        record = JSON.parse(line);
      } catch {
        return; // not a JSON log line
      }
      if (this.isReady(record)) this.emit('ready', record, { restarts: this.#restarts });
    });
  }

  #onExit(child, outcome) {
    if (this.#child === child) this.#child = null;
    if (this.#stopping) return;
    const uptimeMs = Date.now() - this.#startedAt;
    if (uptimeMs >= this.backoff.stableAfterMs) {
      this.#quickDeaths = 0;
      this.#delayMs = this.backoff.initialMs;
    }
    this.#quickDeaths += 1;
    if (this.#quickDeaths > this.backoff.maxQuickRestarts) {
      this.output.log(`${this.name} exited (${describeExit(outcome)}) and keeps dying: ${this.backoff.maxQuickRestarts} restarts, none lasting ${seconds(this.backoff.stableAfterMs)}; giving up`);
      this.emit('gave-up');
      return;
    }
    const delayMs = this.#delayMs;
    this.#delayMs = Math.min(delayMs * 2, this.backoff.maxMs);
    this.#restarts += 1;
    this.output.log(`${this.name} exited unexpectedly (${describeExit(outcome)}) after ${seconds(uptimeMs)}; restart #${this.#restarts} in ${seconds(delayMs)}`);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = null;
      if (!this.#stopping) this.start();
    }, delayMs);
  }

  /** From now on an exit is expected: no restart. */
  holdRestarts() {
    this.#stopping = true;
    clearTimeout(this.#restartTimer);
  }

  /** SIGTERM to its process group, SIGKILL after `timeoutMs`; no restart afterwards. */
  async stop(timeoutMs) {
    this.holdRestarts();
    const child = this.#child;
    if (!child) return;
    await stopProcess({
      pid: child.pid,
      exited: child.closed,
      signal: 'SIGTERM',
      timeoutMs,
      onKill: () => this.output.log(`${this.name} did not stop within ${seconds(timeoutMs)}; sending SIGKILL`),
    });
    const outcome = await Promise.race([child.closed, new Promise((resolve) => setTimeout(resolve, 1_000, null))]);
    this.output.log(`${this.name} stopped${outcome ? ` (${describeExit(outcome)})` : ''}`);
  }

  /** Last resort when the supervisor itself is going down hard. */
  kill() {
    this.holdRestarts();
    if (this.#child) signalGroup(this.#child.pid, 'SIGKILL');
  }
}

// The servers a run started (nats-server, the embedded PostgreSQL, initdb),
// registered the moment they are spawned so that every way out stops them:
// stopAll() on an orderly shutdown or a failed start, signalAllNow() from an
// `exit` handler, and the watchdog (watchdog.cjs) when the owner dies without
// doing either (SIGKILL). Shared by `npm start` and the test run.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlive, signalGroup, startTimeOf, stopProcess } from './process.mjs';

const WATCHDOG = path.join(path.dirname(fileURLToPath(import.meta.url)), 'watchdog.cjs');

export class StartedServers {
  #list = []; // { name, pid, exited?, signal, timeoutMs }, in start order
  #watchdog;

  constructor() {
    // Its own session: a terminal's Ctrl-C does not reach it. Unreferenced, so
    // it never keeps its owner alive; the IPC channel closes when the owner ends.
    this.#watchdog = spawn(process.execPath, [WATCHDOG], { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    this.#watchdog.on('error', () => {}); // without it, the exit handler and stopAll still stop the servers
    this.#watchdog.unref();
    this.#watchdog.channel?.unref();
  }

  /**
   * Registers a spawned server. `signal` stops it gracefully (SIGTERM for
   * nats-server, SIGINT — "fast shutdown" — for PostgreSQL); `exited`, when
   * known, resolves once it is gone.
   */
  add({ name, pid, exited, signal = 'SIGTERM', timeoutMs = 10_000 }) {
    if (!pid) return;
    const entry = { name, pid, exited, signal, timeoutMs };
    this.#list.push(entry);
    this.#tell({ add: { pid, name, signal, startTime: startTimeOf(pid) } });
    exited?.then(() => this.#forget(entry));
  }

  /** A folder the watchdog removes if the owner dies without cleaning up (a test run's temporary data). */
  removeIfAbandoned(folder) {
    this.#tell({ cleanup: folder });
  }

  get names() {
    return this.#list.map((entry) => entry.name);
  }

  /** Stops each server still running, the last started first; resolves when all are gone. */
  async stopAll(log = () => {}) {
    for (const entry of [...this.#list].reverse()) {
      if (isAlive(entry.pid)) {
        await stopProcess({ pid: entry.pid, exited: entry.exited, signal: entry.signal, timeoutMs: entry.timeoutMs });
        log(`${entry.name} stopped`);
      }
      this.#forget(entry);
    }
  }

  /** For an `exit` handler, which cannot wait: the stop signals now; the watchdog finishes the job. */
  signalAllNow() {
    for (const entry of this.#list) signalGroup(entry.pid, entry.signal);
  }

  #forget(entry) {
    const index = this.#list.indexOf(entry);
    if (index === -1) return;
    this.#list.splice(index, 1);
    this.#tell({ remove: entry.pid });
  }

  #tell(message) {
    try {
      if (this.#watchdog.connected) this.#watchdog.send(message);
    } catch {
      // the watchdog is gone: the other ways out remain
    }
  }
}

// Process helpers shared by the infrastructure starters and the supervisor.
import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import watchdogLib from './watchdog.cjs';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first executable called `name` on PATH, then in `extraDirs`; null if none. */
export function findExecutable(name, extraDirs = []) {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), ...extraDirs];
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory; keep looking
    }
  }
  return null;
}

/**
 * Starts a background server (nats-server, postgres) in its own process group,
 * its output appended to `logFile`. Its own group keeps a terminal's Ctrl-C
 * away from it, so the supervisor can stop the apps first and the servers
 * they depend on last.
 */
export function spawnServer(command, args, { logFile, env, cwd, uid, gid }) {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(command, args, { detached: true, stdio: ['ignore', fd, fd], env, cwd, uid, gid });
    child.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', (error) => resolve({ code: null, signal: null, error }));
    });
    return child;
  } finally {
    closeSync(fd); // the child holds its own copy
  }
}

/** True while `pid` runs; a zombie (exited, never reaped: PID 1 in some containers) counts as gone. */
export function isAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (error.code !== 'EPERM') return false;
  }
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc to ask
  }
}

/** Signals a process group led by `pid` (falls back to the process alone); `startTimeOf(pid)` tells a process from a later one with its pid. */
export const { signalGroup, startTimeOf } = watchdogLib;

/**
 * Sends `signal`, then SIGKILL if the process has not exited after
 * `timeoutMs`. `exited` resolves when it is gone; without it, the pid is polled.
 */
export async function stopProcess({ pid, exited, signal = 'SIGTERM', timeoutMs = 10_000, onKill }) {
  const gone = exited ?? pollUntilGone(pid);
  signalGroup(pid, signal);
  let timer;
  const timedOut = new Promise((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  const outcome = await Promise.race([gone, timedOut]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    onKill?.();
    signalGroup(pid, 'SIGKILL');
    await Promise.race([gone, sleep(2_000)]);
  }
}

async function pollUntilGone(pid) {
  while (isAlive(pid)) await sleep(100);
}

/** The size of a file, 0 when it does not exist: where a server's output of this run begins in its log. */
export function sizeOf(file) {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * The line of a server's log that says why it failed, for a one-line error:
 * of what was written from byte `from` on (this run's part), the last line
 * that reads as an error (FATAL, ERROR, [ERR], panic), else the last line,
 * as ": <line>" to append to a message; "" when there is none.
 */
export function lastLine(file, from = 0) {
  let lines = [];
  try {
    lines = readFileSync(file).subarray(from).toString('utf8').split('\n').map((line) => line.trim()).filter(Boolean);
  } catch {
    // no log yet
  }
  const error = lines.findLast((line) => /FATAL|ERROR|\[(ERR|FTL)\]|panic/i.test(line));
  const line = error ?? lines.at(-1);
  return line ? `: ${line}` : '';
}

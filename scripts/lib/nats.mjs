// NATS for `npm start` and the test run: use the one at NATS_URL, or run a local nats-server.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { UserError } from './output.mjs';
import { probeNats } from './probe.mjs';
import { findExecutable, isAlive, lastLine, sizeOf, sleep, spawnServer } from './process.mjs';

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]', '0.0.0.0']);
const INSTALL_HINT =
  'Install it (Debian/Ubuntu: `apt-get install nats-server`; elsewhere see ' +
  'https://docs.nats.io/running-a-nats-service/introduction/installation), ' +
  'or set NATS_URL to a running NATS server with JetStream.';

/** NATS_URL may be a comma-separated list of servers, with or without a scheme. */
function parseServers(raw) {
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      try {
        const url = new URL(entry.includes('://') ? entry : `nats://${entry}`);
        return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 4222) };
      } catch {
        throw new UserError(`NATS_URL is not a valid NATS URL: ${entry}`);
      }
    });
}

/**
 * Resolves with `{ url }`, the NATS_URL to hand to the apps. A server this
 * starts, or adopts from an earlier run, is registered with `servers`
 * (servers.mjs) the moment it runs; `abort` (an AbortSignal) cuts the wait short.
 */
export async function ensureNats({ root, env, log, servers, abort }) {
  const stateDir = path.join(root, '.steerline');
  const pidFile = path.join(stateDir, 'nats.pid');
  const raw = env.NATS_URL || DEFAULT_NATS_URL;
  const found = await findNats(raw, log);
  if (found) {
    const orphan = leftRunning(pidFile, found.port);
    if (orphan) {
      log(`using the nats-server an earlier run left running (pid ${orphan}) at ${found.host}:${found.port}; it stops with this run`);
      servers.add({ name: 'nats-server', pid: orphan, signal: 'SIGTERM' });
    } else {
      log(`using NATS at ${found.host}:${found.port}`);
    }
    return { url: raw };
  }
  const [{ host, port }] = parseServers(raw);
  if (!LOCAL_HOSTS.has(host)) {
    throw new UserError(`Nothing answers at NATS_URL (${raw}). Start that server, or unset NATS_URL to run a local one.`);
  }
  const rel = (file) => path.relative(root, file);
  return startNatsServer({ port, stateDir, pidFile, log, servers, abort, rel, missing: `Nothing answers at ${host}:${port}` });
}

/** The first server of NATS_URL (a comma-separated list, with or without a scheme) that answers, or null. */
export async function findNats(raw, log) {
  const list = parseServers(raw);
  if (list.length === 0) throw new UserError('NATS_URL is empty.');
  for (const { host, port } of list) {
    const info = await probeNats(host, port);
    if (!info) continue;
    if (info.jetstream !== true) {
      log(`warning: the NATS server at ${host}:${port} does not report JetStream; Steerline needs it (nats-server -js).`);
    }
    return { host, port };
  }
  return null;
}

/** Runs nats-server with JetStream on 127.0.0.1:`port`, its store and log in `stateDir`; resolves with `{ url, pid }` once it answers. */
export async function startNatsServer({ port, stateDir, pidFile, log, servers, abort, rel = (file) => file, missing = 'NATS is needed' }) {
  const binary = findExecutable('nats-server', ['/usr/sbin', '/usr/local/bin']);
  if (!binary) throw new UserError(`${missing} and nats-server is not installed. ${INSTALL_HINT}`);
  const storeDir = path.join(stateDir, 'nats');
  const logFile = path.join(stateDir, 'nats.log');
  mkdirSync(storeDir, { recursive: true });
  const args = ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir, ...(pidFile ? ['-P', pidFile] : [])];
  const logStart = sizeOf(logFile);
  const child = spawnServer(binary, args, { logFile, env: process.env });
  servers.add({ name: 'nats-server', pid: child.pid, exited: child.exited, signal: 'SIGTERM' });

  const deadline = Date.now() + 15_000;
  let exited = null;
  child.exited.then((outcome) => (exited = outcome));
  while (!(await probeNats('127.0.0.1', port, 500))) {
    abort?.throwIfAborted();
    if (exited || Date.now() > deadline) {
      const why = exited?.error?.message ?? (exited ? `it exited (${exited.code ?? exited.signal})` : 'it did not answer within 15 s');
      throw new UserError(`Could not start ${binary}: ${why}; its log is ${rel(logFile)}${lastLine(logFile, logStart)}`);
    }
    await sleep(100);
  }
  log(`started nats-server (pid ${child.pid}) at 127.0.0.1:${port} with JetStream; data in ${rel(storeDir)}, log in ${rel(logFile)}`);
  return { url: `nats://127.0.0.1:${port}`, pid: child.pid };
}

/**
 * The pid of the nats-server at `port` that an earlier `npm start` started
 * and, killed outright, could not stop: its command line names our pid file.
 */
function leftRunning(pidFile, port) {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const ours = commandLine.includes(pidFile) && commandLine[commandLine.indexOf('-p') + 1] === String(port);
    return ours && isAlive(pid) ? pid : null;
  } catch {
    return null; // no pid file, or no /proc to confirm it with
  }
}

// NATS for `npm start`: use the one at NATS_URL, or run a local nats-server.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { UserError } from './output.mjs';
import { probeNats } from './probe.mjs';
import { findExecutable, isAlive, sleep, spawnServer, stopProcess, tailFile } from './process.mjs';

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
 * Resolves with `{ url, name?, stop? }`: the NATS_URL to hand to the apps and, when
 * this started a server, the function that stops it.
 */
export async function ensureNats({ root, env, log }) {
  const stateDir = path.join(root, '.steerline');
  const pidFile = path.join(stateDir, 'nats.pid');
  const raw = env.NATS_URL || DEFAULT_NATS_URL;
  const servers = parseServers(raw);
  if (servers.length === 0) throw new UserError('NATS_URL is empty.');
  for (const { host, port } of servers) {
    const info = await probeNats(host, port);
    if (!info) continue;
    if (info.jetstream !== true) {
      log(`warning: the NATS server at ${host}:${port} does not report JetStream; Steerline needs it (nats-server -js).`);
    }
    const orphan = leftRunning(pidFile, port);
    if (orphan) {
      log(`using the nats-server an earlier run left running (pid ${orphan}) at ${host}:${port}`);
      const stop = () => stopProcess({ pid: orphan, signal: 'SIGTERM', timeoutMs: 10_000 });
      return { name: 'nats-server', url: raw, stop };
    }
    log(`using NATS at ${host}:${port}`);
    return { url: raw };
  }

  const [{ host, port }] = servers;
  if (!LOCAL_HOSTS.has(host)) {
    const where = servers.map((server) => `${server.host}:${server.port}`).join(', ');
    throw new UserError(`Nothing answers at NATS_URL (${where}). Start that server, or unset NATS_URL to run a local one.`);
  }
  const binary = findExecutable('nats-server', ['/usr/sbin', '/usr/local/bin']);
  if (!binary) {
    throw new UserError(`Nothing answers at ${host}:${port} and nats-server is not installed. ${INSTALL_HINT}`);
  }

  const storeDir = path.join(stateDir, 'nats');
  const logFile = path.join(stateDir, 'nats.log');
  mkdirSync(storeDir, { recursive: true });
  const args = ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir, '-P', pidFile];
  const child = spawnServer(binary, args, { logFile, env: process.env });
  const stop = () => stopProcess({ pid: child.pid, exited: child.exited, signal: 'SIGTERM', timeoutMs: 10_000 });

  const deadline = Date.now() + 15_000;
  let exited = null;
  child.exited.then((outcome) => (exited = outcome));
  while (!(await probeNats('127.0.0.1', port, 500))) {
    if (exited || Date.now() > deadline) {
      if (!exited) await stop();
      const why = exited?.error?.message ?? (exited ? `it exited (${exited.code ?? exited.signal})` : 'it did not answer within 15 s');
      throw new UserError(`Could not start ${binary}: ${why}. Its log (${logFile}):\n${tailFile(logFile)}`);
    }
    await sleep(100);
  }
  const rel = (file) => path.relative(root, file);
  log(`started nats-server (pid ${child.pid}) at 127.0.0.1:${port} with JetStream; data in ${rel(storeDir)}, log in ${rel(logFile)}`);
  return { name: 'nats-server', url: `nats://127.0.0.1:${port}`, stop };
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

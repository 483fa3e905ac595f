// `npm start` (after `npm run build`): Steerline on one machine.
//
// 1. NATS: the server at NATS_URL, or a local nats-server started here.
// 2. PostgreSQL: DATABASE_URL, or the server at 127.0.0.1:5432, or an embedded
//    one started here.
// 3. The three apps as supervised child processes; prints the gateway's URL
//    once all three are ready, restarts one that dies, and on Ctrl-C / SIGTERM
//    stops the apps (gateway first), then the servers it started, and exits 0.
//
// Whatever it started is stopped on every way out: a failed start (at any
// step), Ctrl-C / SIGTERM (also during start-up), a crash of this script (the
// `exit` handler), and SIGKILL of it (the apps watch their parent, see
// lib/exit-with-parent.cjs; the servers have a watchdog, see lib/servers.mjs).
//
// Variables besides the apps' own (docs/design.md §7):
//   STEERLINE_PG_PORT          where to look for PostgreSQL when DATABASE_URL is unset (5432)
//   STEERLINE_STOP_TIMEOUT_MS  how long an app gets to stop after SIGTERM before SIGKILL (20000;
//                              longer than the apps' own 15 s shutdown limits)
//   METRICS_PORT               the engine's /metrics port, persistence's is the next (9101, 9102;
//                              0: free ports, off: none; lib/metrics-ports.mjs)
//   STEERLINE_DEFAULT_MODEL    the engine's own; unset (and the scripted model on), npm start sets it
//                              to the console's demo (lib/demo-model.json)
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { metricsLines, metricsPorts, refuseBusyMetricsPorts } from './lib/metrics-ports.mjs';
import { ensureNats } from './lib/nats.mjs';
import { createOutput, UserError } from './lib/output.mjs';
import { ensurePostgres } from './lib/postgres.mjs';
import { isListening, probeHost } from './lib/probe.mjs';
import { StartedServers } from './lib/servers.mjs';
import { Supervised } from './lib/supervisor.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Started in this order, stopped in reverse: the gateway stops taking requests
// first, the engine settles its turns, and persistence projects what they wrote.
// Each app logs a JSON line whose `message` contains "<name> ready" once it
// serves; the gateway's line also holds its `url`.
const SERVICES = [
  { name: 'persistence', entry: 'dist/apps/persistence/src/main.js' },
  { name: 'engine', entry: 'dist/apps/engine/src/main.js' },
  { name: 'gateway', entry: 'dist/apps/gateway/src/main.js', announcesUrl: true },
];

const exitWithParent = path.join(root, 'scripts', 'lib', 'exit-with-parent.cjs');
const env = process.env;
const stopTimeoutMs = Number(env.STEERLINE_STOP_TIMEOUT_MS || 20_000);
const defaultGatewayUrl = `http://${env.HOST || '127.0.0.1'}:${env.PORT || 3000}`;
const output = createOutput(SERVICES.map((service) => service.name));
let metrics = {}; // each app's METRICS_PORT (lib/metrics-ports.mjs)

const servers = new StartedServers(); // nats-server, initdb, postgres: whatever this run started
const services = []; // Supervised
const startAbort = new AbortController(); // a shutdown during start-up cuts the waiting short
let startup = null; // the infrastructure phase
let stopping = 0; // when the shutdown began

/** Stops what was started; `finalLine`, when given, is printed last (why a start failed, and what to do). */
async function shutdown(reason, exitCode, finalLine) {
  if (stopping) return;
  stopping = Date.now();
  output.log(`${reason}: stopping`);
  startAbort.abort(new Error(reason));
  await startup?.catch(() => {});
  try {
    // The services stop one by one; none may be restarted meanwhile.
    services.forEach((service) => service.holdRestarts());
    for (const service of [...services].reverse()) await service.stop(stopTimeoutMs);
    await servers.stopAll(output.log);
  } catch (error) {
    output.error(`error while stopping: ${error?.stack ?? error}`);
    exitCode ||= 1;
  }
  output.log(exitCode === 0 ? 'stopped' : `stopped (exit code ${exitCode})`);
  if (finalLine) output.error(finalLine);
  process.exit(exitCode);
}

/**
 * A turn that names no model runs the console's demo (two sleeps, then an
 * answer), unless the user chose a default or turned the scripted model off
 * (then the engine refuses such a turn, 400, naming STEERLINE_DEFAULT_MODEL).
 */
function demoDefaultModel() {
  if (env.STEERLINE_DEFAULT_MODEL || env.STEERLINE_SCRIPTED_MODEL === 'off') return {};
  const demo = readFileSync(path.join(root, 'scripts', 'lib', 'demo-model.json'), 'utf8');
  return { STEERLINE_DEFAULT_MODEL: JSON.stringify(JSON.parse(demo)) };
}

async function startInfrastructure() {
  const options = { root, env, log: output.log, servers, abort: startAbort.signal };
  const nats = await ensureNats(options);
  startAbort.signal.throwIfAborted();
  const postgres = await ensurePostgres(options);
  return { NATS_URL: nats.url, DATABASE_URL: postgres.url };
}

function startServices(childEnv) {
  for (const spec of SERVICES) {
    const service = new Supervised({
      name: spec.name,
      command: process.execPath,
      args: ['--enable-source-maps', '--require', exitWithParent, path.join(root, spec.entry)],
      cwd: root,
      env: metrics[spec.name] ? { ...childEnv, METRICS_PORT: metrics[spec.name] } : childEnv,
      isReady: (record) => messageOf(record).includes(`${spec.name} ready`),
      output,
    });
    service.on('ready', (_record, { restarts }) => {
      if (restarts > 0) output.log(`${spec.name} is ready again after restart #${restarts}`);
    });
    service.once('gave-up', () => void shutdown(`${spec.name} keeps dying`, 1));
    services.push(service);
    service.start();
  }
}

/** A log record's message: Nest's JSON logger nests an object message (`{ msg, … }`) as is. */
function messageOf(record) {
  const message = record.message ?? record.msg;
  if (typeof message === 'string') return message;
  return typeof message?.msg === 'string' ? message.msg : typeof message?.message === 'string' ? message.message : '';
}

/** Resolves with each service's ready record, in SERVICES order. */
async function allReady() {
  const pending = new Set(SERVICES.map((spec) => spec.name));
  const nag = setInterval(() => output.log(`still waiting for ${[...pending].join(', ')} to be ready`), 30_000);
  try {
    return await Promise.all(
      services.map(async (service) => {
        const [record] = await once(service, 'ready');
        pending.delete(service.name);
        return record;
      }),
    );
  } finally {
    clearInterval(nag);
  }
}

async function main() {
  if (!(stopTimeoutMs > 0)) {
    throw new UserError(`STEERLINE_STOP_TIMEOUT_MS must be a number of milliseconds, got "${env.STEERLINE_STOP_TIMEOUT_MS}".`);
  }
  const missing = SERVICES.filter((spec) => !existsSync(path.join(root, spec.entry)));
  if (missing.length) {
    throw new UserError(`${missing.map((spec) => spec.entry).join(', ')} not built: run npm run build (npm start does).`);
  }
  await refuseBusyGatewayPort();
  metrics = metricsPorts(env);
  await refuseBusyMetricsPorts(env, metrics);
  startup = startInfrastructure();
  const urls = await startup;
  if (stopping) return;
  startServices({ ...env, ...demoDefaultModel(), ...urls });

  const records = await allReady();
  if (stopping) return;
  const gateway = records[SERVICES.findIndex((spec) => spec.announcesUrl)];
  const url = typeof gateway?.url === 'string' ? gateway.url : (gateway?.message?.url ?? defaultGatewayUrl);
  process.stdout.write(`\nSteerline is ready: ${url}\nThe console: ${url.replace(/\/+$/, '')}/console\n${metricsLines(env, metrics, url)}\n\n`);
}

/** A second `npm start` would otherwise crash-loop its gateway on EADDRINUSE. */
async function refuseBusyGatewayPort() {
  const { hostname, port } = new URL(defaultGatewayUrl);
  const host = probeHost(hostname);
  if (await isListening(host, Number(port))) {
    throw new UserError(`Something already listens on ${host}:${port} (another npm start?). Stop it, or set PORT.`);
  }
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => (stopping ? signalAgain(signal) : void shutdown(signal, 0)));
}

/**
 * npm forwards the terminal's Ctrl-C, so one keypress arrives twice; a signal
 * a second or more later means "now": the apps are killed, the servers get
 * their stop signal, and the watchdog SIGKILLs any that linger.
 */
function signalAgain(signal) {
  if (Date.now() - stopping < 1_000) return;
  output.log(`${signal} again: killing the apps, stopping the servers without waiting`);
  process.exit(130);
}

process.on('uncaughtException', (error) => {
  output.error(`supervisor error: ${error?.stack ?? error}`);
  void shutdown('supervisor error', 1);
});
// Whatever happens, leave nothing behind: the apps run in their own process
// groups, so nothing else would stop them; the servers get their stop signal
// here, and the watchdog makes sure they go.
process.on('exit', () => {
  services.forEach((service) => service.kill());
  servers.signalAllNow();
});

main().catch((error) => {
  if (stopping) return; // a consequence of the shutdown under way, which ends the process
  const message = error instanceof UserError ? error.message : `start-up failed: ${error?.stack ?? error}`;
  if (services.length === 0 && servers.names.length === 0) {
    output.error(message); // nothing to stop
    process.exit(1);
  }
  void shutdown('start-up failed', 1, message);
});

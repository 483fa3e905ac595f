// PostgreSQL for `npm start`: DATABASE_URL, else a server at the default
// address, else an embedded PostgreSQL (pg-place.mjs says where its files go,
// pg-embedded.mjs runs it).
import path from 'node:path';
import { UserError } from './output.mjs';
import { runEmbedded } from './pg-embedded.mjs';
import { placeEmbedded } from './pg-place.mjs';
import { probePostgres } from './probe.mjs';

const DATABASE = 'steerline';

function defaultPort(env) {
  const raw = env.STEERLINE_PG_PORT ?? '5432';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UserError(`STEERLINE_PG_PORT must be a TCP port number, got "${raw}".`);
  }
  return port;
}

/**
 * Resolves with `{ url }`, the DATABASE_URL for the apps. What it starts is
 * registered with `servers` (servers.mjs); `abort` cuts the start short.
 */
export async function ensurePostgres({ root, env, log, servers, abort }) {
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
  const rel = (file) => (file.startsWith(root + path.sep) ? path.relative(root, file) : file);
  const started = await startEmbedded({ root, stateDir: path.join(root, '.steerline'), database: DATABASE, log, servers, abort, rel });
  return { url: `postgres://postgres:${started.password}@127.0.0.1:${started.port}/${DATABASE}` };
}

/**
 * The embedded PostgreSQL, for `npm start` and the test run. Whatever goes
 * wrong ends in one UserError line naming the cause and the way out, never a
 * raw `spawn … EACCES`.
 */
export async function startEmbedded({ root, stateDir, dataDir, database, log, servers, abort, rel }) {
  try {
    const place = await placeEmbedded({ root, stateDir, dataDir, log });
    return await runEmbedded({ place, database, log, servers, abort, rel });
  } catch (error) {
    if (error instanceof UserError || error === abort?.reason) throw error;
    const cause = error?.code ? `${error.code}: ${error.message}` : (error?.message ?? String(error));
    throw new UserError(`Could not start the embedded PostgreSQL (${cause}); set DATABASE_URL to a PostgreSQL server, or see docs/operations.md ("Local servers").`);
  }
}

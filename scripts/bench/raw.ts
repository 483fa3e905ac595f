import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import readline from 'node:readline';
import { Client } from 'pg';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats } from '@steerline/runtime';
import { stop } from './processes';
import { median, percentile, timeEach } from './stats';

/** The physical floor on this machine, measured in the same run as Steerline's figures. */
export interface RawBaselines {
  natsRequestMs: { p50: number; p99: number };
  jsAckMs: { p50: number; p99: number };
  jsWindowedPerSecond: number;
  pgBatchedRowsPerSecond: number;
}

export async function measureRaw(opts: { natsUrl: string; prefix: string; databaseUrl: string }): Promise<RawBaselines> {
  const responder = await connectNats(opts.natsUrl, 'bench-responder');
  const nc = await connectNats(opts.natsUrl, 'bench-requester');
  const echo = `${opts.prefix}.bench.echo`;
  responder.subscribe(echo, {
    callback: (_err, msg) => {
      msg.respond(msg.data);
    },
  });
  await responder.flush();
  await timeEach(200, () => nc.request(echo, STEER_COMMAND, { timeout: 5000 }));
  const nats = await timeEach(3000, () => nc.request(echo, STEER_COMMAND, { timeout: 5000 }));

  const { jsAck, windowed } = await measureJetStream(nc, opts.prefix, STEER_COMMAND);
  const pgRows = await measurePostgres(opts.databaseUrl);
  await responder.close();
  await nc.close();
  return {
    natsRequestMs: { p50: median(nats), p99: percentile(nats, 99) },
    jsAckMs: { p50: median(jsAck), p99: percentile(jsAck, 99) },
    jsWindowedPerSecond: windowed,
    pgBatchedRowsPerSecond: pgRows,
  };
}

/** Sequential publish → ack samples, and publishes per second with 64 acks in flight, on a stream of its own. */
export async function measureJetStream(nc: NatsConnection, prefix: string, payload: Uint8Array) {
  const jsm = await jetstreamManager(nc);
  const stream = `${prefix.toUpperCase()}_BENCH`;
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.benchlog.>`], storage: 'file' as never });
  try {
    const js = jetstream(nc);
    const jsAck = await timeEach(2000, (i) => js.publish(`${prefix}.benchlog.c${i % 50}`, payload, { msgID: `seq-${i}` }));
    // Windowed: up to 64 publishes awaiting their acks at once.
    const total = 10_000;
    const t0 = performance.now();
    const inFlight = new Set<Promise<unknown>>();
    for (let i = 0; i < total; i++) {
      const p = js.publish(`${prefix}.benchlog.w${i % 50}`, payload, { msgID: `win-${i}` }).finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= 64) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    return { jsAck, windowed: total / ((performance.now() - t0) / 1000) };
  } finally {
    await jsm.streams.delete(stream);
  }
}

/** Rows per second of a batched INSERT (500 rows per transaction, unnest): the floor of anything that writes PostgreSQL. */
export async function measurePostgres(databaseUrl: string): Promise<number> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query('CREATE TEMP TABLE bench_rows (seq bigint PRIMARY KEY, subject text, payload bytea)');
    const rows = 20_000;
    const batch = 500;
    const body = Buffer.from(JSON.stringify({ type: 'SteerQueued', data: { text: 'a steer of ordinary length, about sixty characters' } }));
    const t0 = performance.now();
    for (let i = 0; i < rows; i += batch) {
      const seqs = Array.from({ length: batch }, (_, k) => i + k);
      await db.query('BEGIN');
      await db.query('INSERT INTO bench_rows SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[])', [seqs, seqs.map(() => 'steerline.evt.t.c'), seqs.map(() => body)]);
      await db.query('COMMIT');
    }
    return rows / ((performance.now() - t0) / 1000);
  } finally {
    await db.end();
  }
}

export const get = (url: string) => fetch(url).then((r) => r.arrayBuffer());
export const STEER_BODY = JSON.stringify({ text: 'a steer of ordinary length, about sixty characters' });
/** A steer command's bytes as the engine gets them over NATS: what the raw NATS and JetStream floors send. */
export const STEER_COMMAND = new TextEncoder().encode(JSON.stringify({ tenantId: 'default', text: 'a steer of ordinary length, about sixty characters' }));
export const post = (url: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: STEER_BODY }).then((r) => r.arrayBuffer());

/**
 * The floor processes (floor.ts), running: a bare HTTP server and the raw pipeline (its server and
 * its responder); with a database, also the pipeline with a bare read side (`projected`).
 */
export interface FloorServers {
  bare: string;
  pipeline: string;
  /** The same pipeline, its events read by a bare projector into PostgreSQL. */
  projected?: string;
  /** Their processes, for what each one costs (probe-steer.ts reads their CPU time); `projectorDb`: the bare projector's PostgreSQL backend. */
  pids: { bare?: number; pipeline?: number; responder?: number; projector?: number; projectorDb?: number };
  /** Resolves once the bare projector has committed every event the pipeline appended for it. */
  projectedCaughtUp?(): Promise<void>;
  /** The bare projector's committed batches and the events in them, so far. */
  projectedCounts?(): Promise<{ batches: number; batched: number }>;
  close(): Promise<void>;
}

/** Starts the floor processes on `prefix` (their own stream); `close` stops them and deletes it. */
export async function startFloors(opts: { natsUrl: string; prefix: string; nc: NatsConnection; databaseUrl?: string }): Promise<FloorServers> {
  const jsm = await jetstreamManager(opts.nc);
  const stream = `${opts.prefix.toUpperCase()}_FLOOR`;
  const log = `${opts.prefix}.floorlog`;
  const consumer = 'floor_projector';
  await jsm.streams.add({ name: stream, subjects: [`${log}.>`], storage: 'file' as never });
  const env = { NATS_URL: opts.natsUrl, FLOOR_SUBJECT: `${opts.prefix}.floor.steer`, FLOOR_LOG: log, FLOOR_STREAM: stream, FLOOR_CONSUMER: consumer, FLOOR_DATABASE_URL: opts.databaseUrl ?? '' };
  const children: ChildProcess[] = [];
  const closing: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const end of closing) await end().catch(() => undefined);
    for (const child of children.reverse()) await stop(child);
    await jsm.streams.delete(stream).catch(() => undefined);
  };
  const start = async (role: string) => {
    const { child, ready } = await spawnFloor(role, env);
    children.push(child);
    return { url: String(ready.url ?? ''), pid: child.pid, backend: Number(ready.backend) || undefined };
  };
  try {
    const bare = await start('http');
    const responder = await start('responder');
    const pipeline = await start('pipeline');
    const pids = { bare: bare.pid, pipeline: pipeline.pid, responder: responder.pid };
    if (!opts.databaseUrl) return { bare: bare.url, pipeline: pipeline.url, pids, close };
    await jsm.consumers.add(stream, { durable_name: consumer, filter_subject: `${log}.projected.>`, ack_policy: AckPolicy.All, max_ack_pending: 20_000 });
    const projector = await start('projector');
    const projectedCaughtUp = () => caughtUp(jsm, stream, consumer, 'the bare projector');
    const db = new Client({ connectionString: opts.databaseUrl });
    await db.connect();
    closing.push(() => db.end());
    const projectedCounts = async () => {
      const { batches, events } = (await db.query<{ batches: string; events: string }>('SELECT batches, events FROM floor.checkpoint WHERE id = 1')).rows[0];
      return { batches: Number(batches), batched: Number(events) };
    };
    return { bare: bare.url, pipeline: pipeline.url, projected: `${pipeline.url}/projected`, pids: { ...pids, projector: projector.pid, projectorDb: projector.backend }, projectedCaughtUp, projectedCounts, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Resolves once `consumer` has nothing pending or unacknowledged (polled; 60 s at most). */
export async function caughtUp(jsm: JetStreamManager, stream: string, consumer: string, who: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
    const info = await jsm.consumers.info(stream, consumer);
    if (info.num_pending === 0 && info.num_ack_pending === 0) return;
  }
  throw new Error(`${who} did not catch up within 60 s`);
}

function spawnFloor(role: string, env: Record<string, string>): Promise<{ child: ChildProcess; ready: Record<string, unknown> }> {
  const exitWithParent = join(__dirname, '../../../scripts/lib/exit-with-parent.cjs');
  const child = spawn(process.execPath, ['--require', exitWithParent, join(__dirname, 'floor.js'), role], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`floor ${role} was not ready in 30 s`)), 30_000);
    child.once('exit', (code) => reject(new Error(`floor ${role} exited (${code}) before it was ready`)));
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.includes('floor ready')) return;
      clearTimeout(timer);
      resolve({ child, ready: JSON.parse(line) as Record<string, unknown> });
    });
  });
}

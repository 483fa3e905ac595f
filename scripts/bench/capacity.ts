import { createServer } from 'node:net';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Client } from 'pg';
import { EVENT_TYPE_HEADER, subjects } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { deleteStreams, spawnApp, stop, tearDown } from './processes';
import { STEER_COMMAND, measureJetStream } from './raw';
import type { Row } from './report';
import { cpuMs, pool } from './stats';

// A typical turn: a tool whose output is a few hundred bytes, a second step while a steer
// waits, and a short answer — so the mix of event types is that of real use, not of one row.
const OUTPUT = 'x'.repeat(400);
const TURN = { provider: 'scripted', script: [{ tool: { name: 'echo', args: { text: OUTPUT } } }, { tool: { name: 'sleep', args: { ms: 400 } } }, { text: 'Done: the parser is refactored and its tests pass.' }] };

const TERMINAL = new Set(['TurnCompleted', 'TurnFailed', 'TurnCancelled']);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** One sample of a service's /metrics, summed over its label sets. */
async function sample(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  return text.split('\n').filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`)).reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}

/**
 * Bytes per event where they are stored: the stream's bytes over its messages
 * (JetStream file store, with subjects and headers), and the active read-model
 * generation's relations (tables, indexes, TOAST) over the events projected.
 * Runs `turns` turns on an engine and a persistence process of its own, and
 * reads both services' /metrics to know when they are done.
 */
export async function measureBytesPerEvent(opts: { natsUrl: string; prefix: string; nc: NatsConnection; pgServer: string; turns?: number }) {
  const prefix = `${opts.prefix}y`;
  const database = `steerline_${prefix}`;
  const s = subjects(prefix);
  const [enginePort, persistencePort] = [await freePort(), await freePort()];
  const env = { NATS_URL: opts.natsUrl, STEERLINE_PREFIX: prefix, DATABASE_URL: `${opts.pgServer}/${database}` };
  const children = [(await spawnApp('persistence', { ...env, METRICS_PORT: String(persistencePort) })).child, (await spawnApp('engine', { ...env, METRICS_PORT: String(enginePort) })).child];
  const call = <T>(subject: string, body: unknown) => request<T>(opts.nc, subject, body, { timeoutMs: 30_000, noResponders: 'unavailable' });
  const turns = opts.turns ?? 500;
  try {
    await pool(
      Array.from({ length: turns }, (_, i) => async () => {
        const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
        const { turnId } = await call<{ turnId: string }>(s.startTurn, { tenantId: 'default', conversationId: id, prompt: `Refactor the parser, part ${i}`, model: TURN });
        await call(s.turnSteer(turnId), { tenantId: 'default', text: 'Keep the public API unchanged, and add a test for each fix.' });
      }),
      32,
    );
    const engine = `http://127.0.0.1:${enginePort}/metrics`;
    const persistence = `http://127.0.0.1:${persistencePort}/metrics`;
    for (const deadline = Date.now() + 120_000; ; ) {
      const ended = await sample(engine, 'steerline_turns_ended_total');
      if (ended >= turns && (await sample(persistence, 'steerline_projection_lag_events')) === 0) break;
      if (Date.now() > deadline) throw new Error(`bytes per event: ${ended} of ${turns} turns ended in 120 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const info = await (await jetstreamManager(opts.nc)).streams.info(s.stream);
    const db = new Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    let pgBytes: number;
    try {
      const [row] = (
        await db.query(
          `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           JOIN public.projection_generations g ON g.schema_name = n.nspname
           JOIN public.projection_active a ON a.generation = g.id
           WHERE c.relkind = 'r'`,
        )
      ).rows as { bytes: string }[];
      pgBytes = Number(row.bytes);
    } finally {
      await db.end();
    }
    const events = info.state.messages;
    return { turns, events, jetStreamBytesPerEvent: info.state.bytes / events, postgresBytesPerEvent: pgBytes / events };
  } finally {
    await tearDown({ children, nc: opts.nc, prefix, pgServer: opts.pgServer, database });
  }
}

/**
 * One engine process at full speed: `turns` turns at once, each `steps` tool
 * steps of the instant `echo` and an answer, so the engine's own work (decide,
 * append, react) is all there is. Counted by the engine's /metrics. The same
 * load runs once first, unmeasured, on conversations of its own: a fresh engine
 * spends its first seconds optimising its own code, which a running one does not.
 */
export async function measureEngineThroughput(opts: { natsUrl: string; prefix: string; nc: NatsConnection; turns?: number; steps?: number; entry?: string }) {
  const prefix = `${opts.prefix}t`;
  const s = subjects(prefix);
  const port = await freePort();
  const { child } = await spawnApp('engine', { NATS_URL: opts.natsUrl, STEERLINE_PREFIX: prefix, METRICS_PORT: String(port) }, opts.entry);
  const metrics = `http://127.0.0.1:${port}/metrics`;
  const call = <T>(subject: string, body: unknown) => request<T>(opts.nc, subject, body, { timeoutMs: 30_000, noResponders: 'unavailable' });
  const turns = opts.turns ?? 200;
  const steps = opts.steps ?? 25;
  const model = { provider: 'scripted', script: [...Array.from({ length: steps }, (_, i) => ({ tool: { name: 'echo', args: { text: `step ${i}` } } })), { text: 'done' }] };
  /** Starts `turns` turns, 64 at a time, and resolves once every one of them ended. */
  const runAll = async () => {
    const conversations = await pool(Array.from({ length: turns }, () => () => call<{ id: string }>(s.createConversation, { tenantId: 'default' })), 32);
    // The turns' ends are seen on the log's subjects (their type header), not by scraping the engine
    // every few ms: a scrape is the engine's CPU too, and was ~4 % of it at 20 a second.
    let ended = 0;
    let allEnded!: () => void;
    const done = new Promise<void>((r) => (allEnded = r));
    const ends = opts.nc.subscribe(s.events, {
      callback: (_err, msg) => {
        if (TERMINAL.has(msg.headers?.get(EVENT_TYPE_HEADER) ?? '') && ++ended === turns) allEnded();
      },
    });
    await opts.nc.flush();
    const [boundaries0, events0] = [await sample(metrics, 'steerline_boundaries_total'), await sample(metrics, 'steerline_events_appended_total')];
    const t0 = performance.now();
    const cpu0 = cpuMs(child.pid!);
    await pool(conversations.map(({ id }) => () => call(s.startTurn, { tenantId: 'default', conversationId: id, prompt: 'go', model })), 64);
    let timer!: NodeJS.Timeout;
    await Promise.race([done, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`engine throughput: ${ended} of ${turns} turns ended in 120 s`)), 120_000)))]).finally(() => {
      clearTimeout(timer);
      ends.unsubscribe();
    });
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuMs(child.pid!) - cpu0;
    const boundaries = (await sample(metrics, 'steerline_boundaries_total')) - boundaries0;
    const events = (await sample(metrics, 'steerline_events_appended_total')) - events0;
    return { turns, steps, boundariesPerSecond: boundaries / seconds, eventsPerSecond: events / seconds, cpuMicrosecondsPerEvent: (cpu * 1000) / events };
  };
  try {
    await runAll();
    return await runAll();
  } finally {
    await stop(child);
    await deleteStreams(opts.nc, prefix);
  }
}

/**
 * The rows of `npm run bench` (the capacity model in docs/operations.md reads them). The engine's
 * appends are held (≥ 0.6×) to raw JetStream publishes with 64 acks in flight measured next to
 * them, just before and just after its run (their mean): the same figure from the raw baselines,
 * minutes earlier, read 70 900/s in a run where these read 48 900/s.
 */
export async function capacityRows(opts: Parameters<typeof measureBytesPerEvent>[0]): Promise<Row[]> {
  const before = (await measureJetStream(opts.nc, `${opts.prefix}wb`, STEER_COMMAND)).windowed;
  const e = await measureEngineThroughput(opts);
  const after = (await measureJetStream(opts.nc, `${opts.prefix}wa`, STEER_COMMAND)).windowed;
  const jsWindowed = (before + after) / 2;
  const b = await measureBytesPerEvent(opts);
  return [
    { group: 'raw', name: 'JetStream publish, 64 acks in flight, next to the engine’s run (mean of before and after)', value: jsWindowed, unit: 'msg/s' },
    { group: 'steerline', name: `boundaries per second, one engine (${e.turns} turns at once, ${e.steps} instant tool steps each)`, value: e.boundariesPerSecond, unit: 'boundaries/s' },
    {
      group: 'steerline',
      name: 'events appended per second, one engine (same run)',
      value: e.eventsPerSecond,
      unit: 'events/s',
      floor: jsWindowed,
      floorName: 'raw JetStream publishes, 64 in flight, next to it',
      target: '≥ 0.6×',
    },
    { group: 'steerline', name: `events per turn (a tool step, a steer, a second step, an answer; ${b.turns} turns)`, value: b.events / b.turns, unit: 'events' },
    { group: 'steerline', name: `bytes per event in JetStream (stream bytes / messages, ${b.events} events)`, value: b.jetStreamBytesPerEvent, unit: 'B' },
    { group: 'steerline', name: 'bytes per event in PostgreSQL (read-model tables, indexes and TOAST / events)', value: b.postgresBytesPerEvent, unit: 'B' },
  ];
}

if (require.main === module) {
  // `node dist/scripts/bench/capacity.js`: these rows alone, not written to docs/performance.md.
  void (async () => {
    const { connectNats } = await import('@steerline/runtime');
    const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
    const pgServer = (process.env.BENCH_PG_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres').replace(/\/[^/]*$/, '');
    const nc = await connectNats(natsUrl, 'bench-bytes');
    try {
      for (const r of await capacityRows({ natsUrl, prefix: `bench${Date.now().toString(36)}`, nc, pgServer, turns: Number(process.env.BENCH_TURNS ?? 500) })) console.log(`${r.name}: ${r.value.toFixed(1)} ${r.unit}`);
    } finally {
      await nc.close();
    }
  })().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}

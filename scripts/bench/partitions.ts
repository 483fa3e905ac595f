/**
 * Partitioned projection, through NATS and PostgreSQL: how fast one persistence
 * instance projects a log with 1 partition and with all of `layouts`, and what
 * an event of another partition costs a partition that only skips it. Each run
 * has its own stream and database; runs of different layouts alternate, and
 * medians are reported.
 */
import { jetstream } from '@nats-io/jetstream';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { EVENT_TYPE_HEADER, encodeEvent, subjects, uuidv7, type SteerlineEvent } from '@steerline/contracts';
import { ensureStream, jetstreamManager } from '@steerline/runtime';
import { startPersistence } from '../../apps/persistence/src/app';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { partitionName, partitionOf } from '../../apps/persistence/src/projector/partitions';
import { realisticTurn } from './log-writer';
import { deleteStreams, dropDatabase } from './processes';
import type { Row } from './report';
import { median } from './stats';

export interface PartitionFigures {
  /** Events of the log per second, by partition count (one instance holding them all). */
  byLayout: { partitions: number; eventsPerSecond: number }[];
  /** One partition walking a log of another partition's events only (the other partition held elsewhere). */
  foreignEventsPerSecond: number;
  events: number;
}

const silent = { log: () => undefined, error: () => undefined, warn: () => undefined, fatal: () => undefined, debug: () => undefined, verbose: () => undefined };

export async function measurePartitions(opts: { natsUrl: string; pgServer: string; nc: NatsConnection; events?: number; layouts?: number[]; rounds?: number; log?: (m: string) => void }): Promise<PartitionFigures> {
  const events = opts.events ?? 20_000;
  const layouts = opts.layouts ?? [1, 4];
  const samples = new Map<number, number[]>(layouts.map((p) => [p, []]));
  const foreign: number[] = [];
  for (let round = 0; round < (opts.rounds ?? 3); round++) {
    for (const partitions of layouts) {
      samples.get(partitions)!.push(await run(opts, events, partitions));
      opts.log?.(`partitions: ${partitions} → ${samples.get(partitions)!.at(-1)!.toFixed(0)} events/s`);
    }
    foreign.push(await run(opts, events, 2, 1));
    opts.log?.(`partitions: foreign only → ${foreign.at(-1)!.toFixed(0)} events/s`);
  }
  return { byLayout: layouts.map((p) => ({ partitions: p, eventsPerSecond: median(samples.get(p)!) })), foreignEventsPerSecond: median(foreign), events };
}

/**
 * One run: an instance started on an empty stream, its projector stopped, the
 * log written, then the time from the projector's start until every partition
 * has committed the last event. `onlyFor`: write only conversations of that
 * partition and hold its lock here, so the instance projects the other
 * partition alone and every event it reads is foreign to it.
 */
async function run(opts: { natsUrl: string; pgServer: string; nc: NatsConnection }, events: number, partitions: number, onlyFor?: number): Promise<number> {
  const prefix = `benchp${randomBytes(4).toString('hex')}`;
  const database = `steerline_${prefix}`;
  const databaseUrl = `${opts.pgServer}/${database}`;
  const config = loadPersistenceConfig({ NATS_URL: opts.natsUrl, DATABASE_URL: databaseUrl, STEERLINE_PREFIX: prefix, STEERLINE_PARTITIONS: String(partitions) });
  const s = subjects(prefix);
  await ensureStream(await jetstreamManager(opts.nc), s);
  const app = await startPersistence(config, { logger: silent });
  const blocker = new Client({ connectionString: databaseUrl });
  try {
    await app.projector.stop();
    const last = await writeLog(opts.nc, prefix, events, onlyFor === undefined ? undefined : (subject) => partitionOf(subject, partitions) === onlyFor);
    if (onlyFor !== undefined) {
      await blocker.connect();
      await blocker.query('SELECT pg_advisory_lock(hashtext($1))', [`steerline-projector:${partitionName(s.projectorConsumer, onlyFor, partitions)}`]);
    }
    const t0 = performance.now();
    await app.projector.start();
    if (onlyFor === undefined) await app.projector.waitForSeq(last, 300_000);
    else await partitionReached(blocker, partitionName(s.projectorConsumer, (onlyFor + 1) % partitions, partitions), last);
    return last / ((performance.now() - t0) / 1000);
  } finally {
    await blocker.end().catch(() => undefined);
    await app.close();
    await deleteStreams(opts.nc, prefix);
    await dropDatabase(opts.pgServer, database);
  }
}

async function partitionReached(db: Client, name: string, seq: number): Promise<void> {
  await db.query(`SELECT set_config('search_path', schema_name, false) FROM projection_active JOIN projection_generations ON id = generation`);
  for (;;) {
    const { rows } = await db.query('SELECT stream_seq FROM checkpoints WHERE name = $1', [name]);
    if (rows.length && Number(rows[0].stream_seq) >= seq) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Conversations of a few turns, 50 in flight at a time; only those `keep` accepts. Returns the last stream sequence. */
async function writeLog(nc: NatsConnection, prefix: string, count: number, keep?: (subject: string) => boolean): Promise<number> {
  const s = subjects(prefix);
  const js = jetstream(nc);
  const at = new Date().toISOString();
  let written = 0;
  let last = 0;
  let inFlight: Promise<{ seq: number }>[] = [];
  const flush = async () => {
    for (const ack of await Promise.all(inFlight)) last = Math.max(last, ack.seq);
    inFlight = [];
  };
  let n = 0;
  while (written < count) {
    const group: SteerlineEvent[][] = [];
    while (group.length < 50) {
      const conversationId = uuidv7();
      if (keep && !keep(s.conversationEvents('bench', conversationId))) continue;
      const created = { id: uuidv7(), type: 'ConversationCreated', version: 1, tenantId: 'bench', conversationId, turnId: null, seq: 0, at, data: {} } as unknown as SteerlineEvent;
      group.push([created, ...Array.from({ length: 1 + (n % 3) }, (_, k) => realisticTurn('bench', conversationId, n + k, at)).flat()]);
      n += 1;
    }
    const longest = Math.max(...group.map((g) => g.length));
    for (let i = 0; i < longest; i++) {
      for (const g of group) {
        if (i >= g.length) continue;
        const h = headers();
        h.set(EVENT_TYPE_HEADER, g[i].type);
        inFlight.push(js.publish(s.conversationEvents('bench', g[i].conversationId), encodeEvent(g[i]), { headers: h, timeout: 60_000 }));
        written += 1;
        if (inFlight.length >= 2_000) await flush();
      }
    }
  }
  await flush();
  return last;
}

export function partitionRows(f: PartitionFigures): Row[] {
  const one = f.byLayout.find((l) => l.partitions === 1)?.eventsPerSecond;
  return [
    ...f.byLayout.map((l): Row => ({
      group: 'steerline',
      name: `projection through NATS, ${l.partitions} partition(s) in one instance (${f.events} events, whole log)`,
      value: l.eventsPerSecond,
      unit: 'events/s',
      ...(one !== undefined && l.partitions !== 1 ? { floor: one, floorName: '1 partition' } : {}),
    })),
    ...f.byLayout.filter((l) => l.partitions > 1).map((l): Row => ({ group: 'steerline', name: `per partition of ${l.partitions} (its own events)`, value: l.eventsPerSecond / l.partitions, unit: 'events/s' })),
    { group: 'steerline', name: 'a partition walking only other partitions’ events', value: f.foreignEventsPerSecond, unit: 'events/s', ...(one !== undefined ? { floor: one, floorName: 'applying its own (1 partition)' } : {}) },
    { group: 'steerline', name: 'cost of one foreign event to a partition', value: 1e6 / f.foreignEventsPerSecond, unit: 'µs' },
  ];
}

if (require.main === module) {
  // `node dist/scripts/bench/partitions.js`: these figures alone.
  void (async () => {
    const natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
    const pgServer = (process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres').replace(/\/[^/]*$/, '');
    const { connectNats } = await import('@steerline/runtime');
    const nc = await connectNats(natsUrl, 'bench-partitions');
    const figures = await measurePartitions({ natsUrl, pgServer, nc, events: Number(process.env.BENCH_PARTITION_EVENTS ?? 20_000), rounds: Number(process.env.BENCH_ROUNDS ?? 3), layouts: (process.env.BENCH_LAYOUTS ?? '1,4').split(',').map(Number), log: (m) => process.stderr.write(`bench: ${m}\n`) });
    for (const r of partitionRows(figures)) console.log(`${r.name}: ${r.value.toFixed(1)} ${r.unit}${r.floor ? ` (${(r.value / r.floor).toFixed(2)}× ${r.floorName})` : ''}`);
    await nc.close();
    process.exit(0);
  })();
}

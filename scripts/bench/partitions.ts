/**
 * Partitioned projection, through NATS and PostgreSQL: how fast one persistence
 * instance projects a log with 1 partition and with all of `layouts` — each
 * partition reading the whole log, or only its own subjects (the log written with
 * as many partition tokens, STEERLINE_SUBJECT_PARTITIONS) — how many events its
 * partitions read per event applied, and what an event of another partition
 * costs a partition that only skips it. Each run has its own stream and
 * database; runs of different layouts alternate, and medians are reported.
 */
import { jetstream } from '@nats-io/jetstream';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { EVENT_TYPE_HEADER, encodeEvent, subjects, uuidv7, type SteerlineEvent, type Subjects } from '@steerline/contracts';
import { ensureStream, jetstreamManager } from '@steerline/runtime';
import { startPersistence } from '../../apps/persistence/src/app';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { partitionName, partitionNames, partitionOf } from '../../apps/persistence/src/projector/partitions';
import { realisticTurn } from './log-writer';
import { deleteStreams, dropDatabase } from './processes';
import type { Row } from './report';
import { median } from './stats';

/** Partitions of a generation, and the partition tokens the log's subjects carry (1: none; as many: each partition reads only its own). */
export interface Layout {
  partitions: number;
  subjectPartitions: number;
}

const ownSubjects = (l: Layout) => l.partitions > 1 && l.subjectPartitions === l.partitions;
const layoutName = (l: Layout) => `${l.partitions} partition(s)${l.partitions > 1 ? (ownSubjects(l) ? ', each on its own subjects' : ', each reading the whole log') : ''}`;

/** `1,4,4/4`: partitions, and after a slash the subject partitions (default 1). */
export function parseLayouts(text: string): Layout[] {
  return text.split(',').map((part) => {
    const [partitions, subjectPartitions = '1'] = part.split('/');
    return { partitions: Number(partitions), subjectPartitions: Number(subjectPartitions) };
  });
}

export interface PartitionFigures {
  /** Events of the log per second, and events its partitions were handed per event applied, by layout (one instance holding every partition). */
  byLayout: (Layout & { eventsPerSecond: number; readsPerApplied: number })[];
  /** One partition walking a log of another partition's events only (the other partition held elsewhere). */
  foreignEventsPerSecond: number;
  events: number;
}

const silent = { log: () => undefined, error: () => undefined, warn: () => undefined, fatal: () => undefined, debug: () => undefined, verbose: () => undefined };

export const DEFAULT_LAYOUTS: Layout[] = [
  { partitions: 1, subjectPartitions: 1 },
  { partitions: 4, subjectPartitions: 1 },
  { partitions: 4, subjectPartitions: 4 },
];

export async function measurePartitions(opts: { natsUrl: string; pgServer: string; nc: NatsConnection; events?: number; layouts?: Layout[]; rounds?: number; log?: (m: string) => void }): Promise<PartitionFigures> {
  const events = opts.events ?? 20_000;
  const layouts = opts.layouts ?? DEFAULT_LAYOUTS;
  const samples = layouts.map(() => [] as Run[]);
  const foreign: number[] = [];
  for (let round = 0; round < (opts.rounds ?? 3); round++) {
    for (const [i, layout] of layouts.entries()) {
      samples[i].push(await run(opts, events, layout));
      const r = samples[i].at(-1)!;
      opts.log?.(`partitions: ${layoutName(layout)} → ${r.eventsPerSecond.toFixed(0)} events/s, ${r.readsPerApplied.toFixed(2)} reads per event applied`);
    }
    foreign.push((await run(opts, events, { partitions: 2, subjectPartitions: 1 }, 1)).eventsPerSecond);
    opts.log?.(`partitions: foreign only → ${foreign.at(-1)!.toFixed(0)} events/s`);
  }
  return {
    byLayout: layouts.map((l, i) => ({ ...l, eventsPerSecond: median(samples[i].map((r) => r.eventsPerSecond)), readsPerApplied: median(samples[i].map((r) => r.readsPerApplied)) })),
    foreignEventsPerSecond: median(foreign),
    events,
  };
}

interface Run {
  eventsPerSecond: number;
  /** Messages the partitions' durable consumers delivered, over the events of the log (each applied by one partition). */
  readsPerApplied: number;
}

/**
 * One run: an instance started on an empty stream, its projector stopped, the
 * log written, then the time from the projector's start until every partition
 * has committed the last event. `onlyFor`: write only conversations of that
 * partition and hold its lock here, so the instance projects the other
 * partition alone and every event it reads is foreign to it.
 */
async function run(opts: { natsUrl: string; pgServer: string; nc: NatsConnection }, events: number, layout: Layout, onlyFor?: number): Promise<Run> {
  const { partitions, subjectPartitions } = layout;
  const prefix = `benchp${randomBytes(4).toString('hex')}`;
  const database = `steerline_${prefix}`;
  const databaseUrl = `${opts.pgServer}/${database}`;
  const config = loadPersistenceConfig({
    NATS_URL: opts.natsUrl,
    DATABASE_URL: databaseUrl,
    STEERLINE_PREFIX: prefix,
    STEERLINE_PARTITIONS: String(partitions),
    STEERLINE_SUBJECT_PARTITIONS: String(subjectPartitions),
  });
  const s = subjects(prefix, { subjectPartitions });
  const jsm = await jetstreamManager(opts.nc);
  await ensureStream(jsm, s);
  const app = await startPersistence(config, { logger: silent });
  const blocker = new Client({ connectionString: databaseUrl });
  try {
    await app.projector.stop();
    const last = await writeLog(opts.nc, s, events, onlyFor === undefined ? undefined : (subject) => partitionOf(subject, partitions) === onlyFor);
    if (onlyFor !== undefined) {
      await blocker.connect();
      await blocker.query('SELECT pg_advisory_lock(hashtext($1))', [`steerline-projector:${partitionName(s.projectorConsumer, onlyFor, partitions)}`]);
    }
    const t0 = performance.now();
    await app.projector.start();
    if (onlyFor === undefined) await app.projector.waitForSeq(last, 300_000);
    else await partitionReached(blocker, partitionName(s.projectorConsumer, (onlyFor + 1) % partitions, partitions), last);
    const eventsPerSecond = last / ((performance.now() - t0) / 1000);
    const consumers = await Promise.all(partitionNames(s.projectorConsumer, partitions).map((name) => jsm.consumers.info(s.stream, name).catch(() => undefined)));
    const delivered = consumers.reduce((sum, c) => sum + (c?.delivered.consumer_seq ?? 0), 0);
    return { eventsPerSecond, readsPerApplied: delivered / last };
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
async function writeLog(nc: NatsConnection, s: Subjects, count: number, keep?: (subject: string) => boolean): Promise<number> {
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
  const partitioned = f.byLayout.filter((l) => l.partitions > 1);
  return [
    ...f.byLayout.map((l): Row => ({
      group: 'steerline',
      name: `projection through NATS, ${layoutName(l)}, in one instance (${f.events} events)`,
      value: l.eventsPerSecond,
      unit: 'events/s',
      ...(one !== undefined && l.partitions !== 1 ? { floor: one, floorName: '1 partition' } : {}),
    })),
    ...partitioned.map((l): Row => ({
      group: 'steerline',
      name: `events a partition reads / events it applies, ${layoutName(l)}`,
      value: l.readsPerApplied,
      unit: '',
      // The issue's target is for partitions on their own subjects; reading the whole log is `partitions` by construction.
      ...(ownSubjects(l) ? { target: '≤ 1.1' } : {}),
    })),
    ...partitioned.map((l): Row => ({ group: 'steerline', name: `per partition of ${layoutName(l)} (its own events)`, value: l.eventsPerSecond / l.partitions, unit: 'events/s' })),
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
    const figures = await measurePartitions({
      natsUrl,
      pgServer,
      nc,
      events: Number(process.env.BENCH_PARTITION_EVENTS ?? 20_000),
      rounds: Number(process.env.BENCH_ROUNDS ?? 3),
      layouts: process.env.BENCH_LAYOUTS ? parseLayouts(process.env.BENCH_LAYOUTS) : DEFAULT_LAYOUTS,
      log: (m) => process.stderr.write(`bench: ${m}\n`),
    });
    for (const r of partitionRows(figures)) console.log(`${r.name}: ${r.value.toFixed(1)} ${r.unit}${r.floor ? ` (${(r.value / r.floor).toFixed(2)}× ${r.floorName})` : ''}`);
    await nc.close();
    process.exit(0);
  })();
}

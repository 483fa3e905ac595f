/**
 * `npm run bench`: Steerline's figures side by side with the raw hops they are
 * made of, measured in one run on this machine (NATS_URL, and PostgreSQL at
 * BENCH_PG_URL or DATABASE_URL's server). Starts its own gateway, engine and
 * persistence processes on a fresh prefix and database, removes them after,
 * prints a table and writes it to docs/performance.md.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { subjects } from '@steerline/contracts';
import { connectNats } from '@steerline/runtime';
import { benchProjector } from '../../apps/persistence/src/projector/projector.bench';
import { floorRows, measureBatchPath, measureSteerAccept } from './accept';
import { bigReadRows, measureBigReads } from './big-read';
import { gatewayIdleOnly, idleGatewayRows, measureIdleGateway } from './gateway-idle';
import { measureRateLimit, rateLimitRows } from './rate-limit';
import { capacityRows, measureEngineThroughput } from './capacity';
import { externalBoundaryRows, measureExternalBoundary } from './external-boundary';
import { boundaryAckRows, measureBoundaryAcks } from './boundary-acks';
import { interruptRows, measureInterrupt } from './interrupt';
import { engineScaleRows, measureEngineScale, subscriptionBytes } from './engine-scale';
import { measurePartitions, partitionRows } from './partitions';
import { deleteStreams, spawnApp, tearDown } from './processes';
import { STEER_COMMAND, measureJetStream, measureRaw, startFloors } from './raw';
import { renderReport, type Row } from './report';
import { cpuMs, median } from './stats';
import { measureBoundary, measureProjectionLag } from './steerline';
import { measureWatchers } from './watchers';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_SERVER = (process.env.BENCH_PG_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres').replace(/\/[^/]*$/, '');
const IDLE_TURNS = (process.env.BENCH_IDLE_TURNS ?? '1000,10000,100000').split(',').map(Number);
const SLEEPING_TURNS = (process.env.BENCH_SLEEPING_TURNS ?? '1000,10000').split(',').map(Number);
const IDLE_WATCHERS = Number(process.env.BENCH_IDLE_WATCHERS ?? 10_000);
const STORM_WATCHERS = Number(process.env.BENCH_STORM_WATCHERS ?? 5_000);
const machine = () => `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;

async function main(): Promise<void> {
  // BENCH_ONLY=watchers: only the event-stream figures, in a block of their own.
  if (process.env.BENCH_ONLY === 'watchers') return watchersOnly();
  if (process.env.BENCH_ONLY === 'scale') return scaleOnly();
  if (process.env.BENCH_ONLY === 'gateway-idle') return gatewayIdleOnly({ natsUrl: NATS_URL, pgServer: PG_SERVER, machine: machine() });
  // BENCH_ONLY=interrupt: only an urgent steer's figures, on an engine of their own, in a block of their own.
  if (process.env.BENCH_ONLY === 'interrupt') return interruptOnly();
  // BENCH_ONLY=partitions: only the partitioned projection's figures (4 partitions on the whole log and on their own subjects, against 1), in a block of their own.
  if (process.env.BENCH_ONLY === 'partitions') return partitionsOnly();
  // BENCH_ONLY=capacity: the raw JetStream windowed publish, then the engine's throughput against it, printed;
  // BENCH_BASELINE_DIST=<another build's dist> runs its engine too, in alternation (BENCH_ROUNDS times, 2 unless told).
  if (process.env.BENCH_ONLY === 'capacity') return capacityOnly();
  // BENCH_ONLY=accept: only the floors and steer accept, printed (docs/performance.md untouched).
  const acceptOnly = process.env.BENCH_ONLY === 'accept';
  // BENCH_ONLY=reads: only the big conversation reads, printed; BENCH_BASELINE_DIST=<another build's dist> reads from its gateway too, in alternation.
  const readsOnly = process.env.BENCH_ONLY === 'reads';
  const prefix = `bench${randomBytes(4).toString('hex')}`;
  const database = `steerline_${prefix}`;
  const databaseUrl = `${PG_SERVER}/${database}`;
  const env = { NATS_URL, STEERLINE_PREFIX: prefix, DATABASE_URL: databaseUrl, PORT: '0', STEERLINE_RATE_LIMIT: '0' };
  const log = (m: string) => process.stderr.write(`bench: ${m}\n`);
  const nc = await connectNats(NATS_URL, 'bench');
  const children: ChildProcess[] = [];
  try {
    log(`prefix ${prefix}; starting persistence, engine, gateway`);
    const persistence = await spawnApp('persistence', env);
    const engine = await spawnApp('engine', env);
    const gateway = await spawnApp('gateway', env);
    children.push(persistence.child, engine.child, gateway.child);
    const gatewayUrl = String(gateway.ready.url);

    // BENCH_ONLY=external: only what an external turn adds at a boundary, printed (docs/performance.md untouched).
    if (process.env.BENCH_ONLY === 'external') {
      log('external turns: the boundary and a cancel');
      return console.log(renderReport(externalBoundaryRows(await measureExternalBoundary({ gatewayUrl, natsUrl: NATS_URL, prefix, nc })), machine()).table);
    }
    if (readsOnly) {
      const baseline = process.env.BENCH_BASELINE_DIST ? await spawnApp('gateway', env, join(process.env.BENCH_BASELINE_DIST, 'apps/gateway/src/main.js')) : undefined;
      if (baseline) children.push(baseline.child);
      const reads = await measureBigReads({ gatewayUrl, baselineUrl: baseline && String(baseline.ready.url), nc, prefix, databaseUrl, sizes: [1000, 10_000] });
      return console.log(renderReport(bigReadRows(reads), machine()).table);
    }
    log('raw baselines');
    const raw = await measureRaw({ natsUrl: NATS_URL, prefix, databaseUrl });
    log('steer accept, interleaved with its floors, from the load client');
    const floors = await startFloors({ natsUrl: NATS_URL, prefix, nc, databaseUrl });
    const pids = { gateway: gateway.child.pid!, engine: engine.child.pid!, persistence: persistence.child.pid! };
    const persistenceMetrics = typeof persistence.ready.metrics === 'string' ? persistence.ready.metrics : undefined;
    const accept = await measureSteerAccept({ gatewayUrl, floors, pids, persistenceMetrics, natsUrl: NATS_URL, nc, prefix, pgServer: PG_SERVER, database }).finally(() => floors.close());
    // The read side's live cost is held against the projector's batch path (a short run of it here).
    if (acceptOnly) return console.log(renderReport(floorRows(raw, accept, await measureBatchPath(databaseUrl, accept)), machine()).table);
    log('boundary overhead');
    const boundary = await measureBoundary({ natsUrl: NATS_URL, prefix, nc });
    log('interrupt: urgent steer to the request that carries it');
    const interrupt = await measureInterrupt({ natsUrl: NATS_URL, prefix, nc });
    log('projection lag');
    const lag = await measureProjectionLag(gatewayUrl, nc, prefix);
    log('projector throughput');
    const rounds = await benchProjector({ databaseUrl, events: 20_000, cpuMs });
    const projector = {
      projectorEventsPerSecond: median(rounds.map((r) => r.projectorEventsPerSecond)),
      rawInsertRowsPerSecond: median(rounds.map((r) => r.rawInsertRowsPerSecond)),
    };
    const batchPath = await measureBatchPath(databaseUrl, accept, rounds);
    log('partitioned projection');
    const partitioned = await measurePartitions({ natsUrl: NATS_URL, pgServer: PG_SERVER, nc, log });
    log('rebuild');
    const rebuild = await timeRebuild(env, nc, prefix);
    log('reading big conversations');
    const reads = await measureBigReads({ gatewayUrl, nc, prefix, databaseUrl, sizes: [1000, 10_000] });
    log('boundary: event-log publishes and acks');
    const boundaryAcks = await measureBoundaryAcks({ natsUrl: NATS_URL, prefix, nc });
    log(`engine with ${IDLE_TURNS.join(', ')} turns waiting for approval, then ${SLEEPING_TURNS.join(', ')} sleeping`);
    const scale = [
      ...(await measureEngineScale({ natsUrl: NATS_URL, prefix, nc, sizes: IDLE_TURNS, waiting: 'approval', log })),
      ...(await measureEngineScale({ natsUrl: NATS_URL, prefix, nc, sizes: SLEEPING_TURNS, waiting: 'sleep', log })),
    ];

    const rows: Row[] = [
      ...floorRows(raw, accept, batchPath),
      ...[0, 1, 5].map((k): Row => ({ group: 'steerline', name: `boundary overhead, ${k} steer(s) queued, median`, value: boundary[k], unit: 'ms', floor: raw.jsAckMs.p50, floorName: 'one JS ack' })),
      // What delivering a batch of steers adds to a boundary, in time; its acks are counted (boundaryAckRows), where the target is checked.
      ...[1, 5].map((k): Row => ({ group: 'steerline', name: `added by delivering ${k} steer(s) (${k} queued − 0 queued)`, value: boundary[k] - boundary[0], unit: 'ms', floor: raw.jsAckMs.p50, floorName: 'one JS ack' })),
      ...interruptRows(interrupt),
      { group: 'steerline', name: 'projector throughput', value: projector.projectorEventsPerSecond, unit: 'events/s', floor: projector.rawInsertRowsPerSecond, floorName: 'raw batched INSERT of the same payloads', target: '≥ 0.5×' },
      ...partitionRows(partitioned),
      { group: 'steerline', name: 'end-to-end lag, steer accepted → visible in the read model, p50', value: lag.p50, unit: 'ms' },
      { group: 'steerline', name: 'end-to-end lag, p99', value: lag.p99, unit: 'ms' },
      { group: 'steerline', name: `rebuild (${rebuild.events} events: replay and switch)`, value: rebuild.eventsPerSecond, unit: 'events/s', floor: projector.rawInsertRowsPerSecond, floorName: 'raw batched INSERT' },
      { group: 'steerline', name: 'rebuild, the whole command with its start-up', value: rebuild.wallEventsPerSecond, unit: 'events/s' },
      ...bigReadRows(reads),
      ...boundaryAckRows(boundaryAcks),
      ...engineScaleRows(scale, await subscriptionBytes(nc, prefix)),
    ];
    log('external turns: the boundary and a cancel');
    rows.push(...externalBoundaryRows(await measureExternalBoundary({ gatewayUrl, natsUrl: NATS_URL, prefix, nc })));
    log('event streams at scale');
    rows.push(...watcherRows(await measureWatchers({ natsUrl: NATS_URL, prefix, nc, idle: IDLE_WATCHERS, storm: STORM_WATCHERS, log })));
    log('capacity: engine throughput, bytes per event');
    rows.push(...(await capacityRows({ natsUrl: NATS_URL, prefix, nc, pgServer: PG_SERVER })));
    log('idle gateway CPU while another serves steers');
    rows.push(...idleGatewayRows(await measureIdleGateway({ env, servingUrl: gatewayUrl, servingPid: gateway.child.pid!, baselineDist: process.env.BENCH_BASELINE_DIST, log })));
    log('what the shared rate limit adds to a request');
    rows.push(...rateLimitRows(await measureRateLimit({ env, nc, prefix })));
    const report = renderReport(rows, machine());
    console.log(report.table);
    if (process.env.BENCH_WRITE !== '0') await report.write(join(__dirname, '../../../docs/performance.md'));
  } finally {
    await tearDown({ children, nc, prefix, pgServer: PG_SERVER, database });
    await nc.close();
  }
}

async function capacityOnly(): Promise<void> {
  await withBenchNats(async (prefix, nc) => {
    const baseline = process.env.BENCH_BASELINE_DIST && join(process.env.BENCH_BASELINE_DIST, 'apps/engine/src/main.js');
    const builds = baseline ? [{ name: 'this build', entry: undefined }, { name: 'baseline', entry: baseline }] : [{ name: 'this build', entry: undefined }];
    for (let round = 0; round < Number(process.env.BENCH_ROUNDS ?? 2); round++) {
      for (const build of builds) {
        const { windowed } = await measureJetStream(nc, `${prefix}r${round}`, STEER_COMMAND);
        const e = await measureEngineThroughput({ natsUrl: NATS_URL, prefix: `${prefix}${round}${build.entry ? 'b' : 'a'}`, nc, entry: build.entry });
        console.log(
          `round ${round + 1}, ${build.name}: raw JetStream 64 in flight ${windowed.toFixed(0)}/s; engine ${e.eventsPerSecond.toFixed(0)} events/s (${(e.eventsPerSecond / windowed).toFixed(2)}×), ` +
            `${e.boundariesPerSecond.toFixed(0)} boundaries/s, ${e.cpuMicrosecondsPerEvent.toFixed(1)} µs engine CPU per event`,
        );
      }
    }
  });
}

/** A fresh subject prefix and a NATS connection for one BENCH_ONLY block, closed after it. */
async function withBenchNats(block: (prefix: string, nc: Awaited<ReturnType<typeof connectNats>>) => Promise<void>): Promise<void> {
  const prefix = `bench${randomBytes(4).toString('hex')}`;
  const nc = await connectNats(NATS_URL, 'bench');
  try {
    await block(prefix, nc);
  } finally {
    await nc.close();
  }
}

/** BENCH_ONLY=scale: only the curve (engine and gateway at BENCH_IDLE_TURNS, BENCH_SLEEPING_TURNS), printed; docs/performance.md untouched. */
async function scaleOnly(): Promise<void> {
  return withBenchNats(async (prefix, nc) => {
    const log = (m: string) => process.stderr.write(`bench: ${m}\n`);
    const scale = [
      ...(await measureEngineScale({ natsUrl: NATS_URL, prefix, nc, sizes: IDLE_TURNS, waiting: 'approval', log })),
      ...(SLEEPING_TURNS.some(Boolean) ? await measureEngineScale({ natsUrl: NATS_URL, prefix, nc, sizes: SLEEPING_TURNS, waiting: 'sleep', log }) : []),
    ];
    console.log(renderReport(engineScaleRows(scale, await subscriptionBytes(nc, prefix)), machine()).table);
  });
}

async function partitionsOnly(): Promise<void> {
  return withBenchNats(async (_prefix, nc) => {
    const log = (m: string) => process.stderr.write(`bench: ${m}\n`);
    const figures = await measurePartitions({ natsUrl: NATS_URL, pgServer: PG_SERVER, nc, log, rounds: Number(process.env.BENCH_ROUNDS ?? 3) });
    const report = renderReport(partitionRows(figures), machine(), 'bench-partitions');
    console.log(report.table);
    if (process.env.BENCH_WRITE !== '0') await report.write(join(__dirname, '../../../docs/performance.md'));
  });
}

async function interruptOnly(): Promise<void> {
  return withBenchNats(async (prefix, nc) => {
    const report = renderReport(interruptRows(await measureInterrupt({ natsUrl: NATS_URL, prefix, nc })), machine(), 'bench-interrupt');
    console.log(report.table);
    if (process.env.BENCH_WRITE !== '0') await report.write(join(__dirname, '../../../docs/performance.md'));
  });
}

async function watchersOnly(): Promise<void> {
  const prefix = `bench${randomBytes(4).toString('hex')}`;
  const nc = await connectNats(NATS_URL, 'bench');
  try {
    const log = (m: string) => process.stderr.write(`bench: ${m}\n`);
    const figures = await measureWatchers({ natsUrl: NATS_URL, prefix, nc, idle: IDLE_WATCHERS, storm: STORM_WATCHERS, log });
    const report = renderReport(watcherRows(figures), machine(), 'bench-watchers');
    console.log(report.table);
    if (process.env.BENCH_WRITE !== '0') await report.write(join(__dirname, '../../../docs/performance.md'));
  } finally {
    await deleteStreams(nc, prefix);
    await nc.close();
  }
}

function watcherRows(w: Awaited<ReturnType<typeof measureWatchers>>): Row[] {
  return [
    { group: 'steerline', name: `event streams: JetStream consumers per live watcher (${w.idle} idle watchers)`, value: w.consumersPerWatcher, unit: '', target: '0' },
    { group: 'memory', name: `gateway RSS with ${w.idle} idle watchers (${w.rssBefore.toFixed(0)} MiB without)`, value: w.rssIdle, unit: 'MiB' },
    { group: 'memory', name: 'gateway memory per idle watcher', value: w.kibPerWatcher, unit: 'KiB' },
    { group: 'steerline', name: `${w.idle} watchers opened and live`, value: w.openSeconds, unit: 's' },
    { group: 'steerline', name: `one appended event → each of ${w.idle} watchers, p50`, value: w.fanOutP50, unit: 'ms' },
    { group: 'steerline', name: `one appended event → each of ${w.idle} watchers, p99`, value: w.fanOutP99, unit: 'ms' },
    { group: 'steerline', name: `one appended event → the last of ${w.idle} watchers`, value: w.fanOutAll, unit: 'ms' },
    { group: 'steerline', name: `reconnect storm: ${w.storm} watchers live again after a gateway restart`, value: w.stormSeconds, unit: 's' },
    { group: 'steerline', name: `reconnect storm: watchers with a gap or a duplicate (${w.stormEvents} events appended throughout)`, value: w.stormBroken, unit: '', target: '0' },
    { group: 'steerline', name: 'reconnect storm: JetStream consumers held once live', value: w.stormConsumers, unit: '', target: '0' },
    { group: 'raw', name: 'core NATS publish → subscribe + HTTP chunk write → read, p50', value: w.livePath.floorP50, unit: 'ms' },
    { group: 'steerline', name: 'live output: delta published → read by an SSE client, p50', value: w.livePath.p50, unit: 'ms', floor: w.livePath.floorP50, floorName: 'NATS hop + HTTP write', target: '≤ 2×' },
    { group: 'steerline', name: 'live output: delta published → read by an SSE client, p99', value: w.livePath.p99, unit: 'ms', floor: w.livePath.floorP99, floorName: 'same, p99s' },
  ];
}

async function timeRebuild(env: Record<string, string>, nc: Awaited<ReturnType<typeof connectNats>>, prefix: string) {
  const jsm = await jetstreamManager(nc);
  const events = (await jsm.streams.info(subjects(prefix).stream)).state.messages;
  const t0 = performance.now();
  const { stdout } = await promisify(execFile)(process.execPath, [join(__dirname, '../rebuild.js')], { env: { ...process.env, ...env } });
  const wallSeconds = (performance.now() - t0) / 1000;
  // The rebuild's own report (replay and switch, without the process start-up).
  const report = stdout
    .split('\n')
    .filter((l) => l.includes('rebuild complete'))
    .map((l) => JSON.parse(l) as { message?: { durationMs?: number } } & { durationMs?: number })
    .map((r) => r.durationMs ?? r.message?.durationMs)[0];
  return { events, eventsPerSecond: events / ((report ?? wallSeconds * 1000) / 1000), wallEventsPerSecond: events / wallSeconds };
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);

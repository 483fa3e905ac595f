/**
 * Steer accept against its floors, all measured by one lean HTTP client in a process of its own
 * (load-client.ts), and the CPU each process on the path spends per 1 000 requests with 64 clients.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Client } from 'pg';
import { encodeEvent, subjects } from '@steerline/contracts';
import { readSubject } from '@steerline/runtime';
import type { LogMessage } from '../../apps/persistence/src/projector/batch';
import { benchProjector, type ProjectorBenchRound } from '../../apps/persistence/src/projector/projector.bench';
import { CLIENT_CORE_LIMIT, interleavedLoad, listenerPid, startLoadClient, type Phase, type Way } from './load';
import { STEER_BODY, caughtUp, type FloorServers, type RawBaselines } from './raw';
import { ratioIs, parseTarget, type Row, type Target } from './report';
import { idleTurn } from './steerline';
import { cpuMs, median, pool } from './stats';

/** Requests per client in the 64-client warm-up: 5 120 events for the read side, as many as the batch path's warm-up. */
const WARM_64 = 80;

export interface AcceptContext {
  gatewayUrl: string;
  floors: FloorServers;
  /** The bench's own app processes. */
  pids: { gateway: number; engine: number; persistence: number };
  /** The persistence process's metrics endpoint (its batch sizes are read from it). */
  persistenceMetrics?: string;
  natsUrl: string;
  nc: NatsConnection;
  prefix: string;
  pgServer: string;
  database: string;
}

/**
 * Steer accept through the gateway (`Prefer: wait=0`), one client then 64 at once, in blocks
 * alternating with the floors' (a bare HTTP round trip, the raw pipeline), so that a change in
 * the machine's load between them does not land in the ratios.
 */
export async function measureSteerAccept(ctx: AcceptContext) {
  const api = `${ctx.gatewayUrl}/v1`;
  const s = subjects(ctx.prefix);
  const jsm = await jetstreamManager(ctx.nc);
  const admin = new Client({ connectionString: `${ctx.pgServer}/postgres` });
  await admin.connect();
  const client = await startLoadClient();
  try {
    const nats = listenerPid(Number(new URL(ctx.natsUrl).port || 4222));
    // PostgreSQL's share: the backends serving the bench's database (the cluster's shared
    // processes, e.g. the WAL writer, are left out; other databases are other work).
    const backends = async () => (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [ctx.database])).rows.map((r) => r.pid);
    const one = (pid: number | undefined) => () => (pid ? [pid] : []);
    const post = (urls: string[], headers: Record<string, string> = {}): Way['spec'] => ({ method: 'POST', urls, headers: { 'content-type': 'application/json', ...headers }, body: STEER_BODY });
    const steers = (turns: string[]) => post(turns.map((t) => `${api}/turns/${t}/steers`), { prefer: 'wait=0' });
    // The read side projects what a block appended after its last steer was answered: its CPU is read once it caught up.
    const projectorCaughtUp = () => caughtUp(jsm, s.stream, s.projectorConsumer, 'the projector');
    // Events appended, and the projector's committed batches and the messages in them.
    const counters = async () => {
      const events = (await jsm.streams.info(s.stream)).state.messages;
      const text = ctx.persistenceMetrics ? await (await fetch(ctx.persistenceMetrics)).text() : '';
      const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
      return { events, batches: metric('steerline_projection_batch_size_count'), batched: metric('steerline_projection_batch_size_sum') };
    };

    // One client steering 40 running turns in turn. The first 1 500 steers warm the processes up (the
    // gateway's median is still falling after 1 000, as its code is optimised), and as many requests
    // warm the floors; the 1 000 measured after them leave each turn 63 steers.
    const few = await pool(Array.from({ length: 40 }, () => () => idleTurn(api)), 8);
    const sequentialWays: Record<string, Way> = {
      bare: { spec: { method: 'GET', urls: [ctx.floors.bare] } },
      healthz: { spec: { method: 'GET', urls: [`${ctx.gatewayUrl}/healthz`] } },
      pipeline: { spec: post([ctx.floors.pipeline]) },
      steer: { spec: steers(few) },
    };
    for (const way of Object.values(sequentialWays)) await client.run({ ...way.spec, clients: 1, each: 1500 });
    const sequential = await interleavedLoad(client, sequentialWays, 5, 1, 200);

    const turns = await pool(Array.from({ length: 64 }, () => () => idleTurn(api)), 16);
    // Warmed up at 64 clients first, unmeasured, as the projector's batch path is on 5 000 events: a
    // process that has not yet applied that many live events is measured optimising its own code and
    // growing its heap (persistence alone: 167-182 µs of CPU per event cold, 70-99 µs after 10 000).
    // The steers go to turns of their own, so the measured turns' queues are as long as without it.
    const warmTurns = await pool(Array.from({ length: 64 }, () => () => idleTurn(api)), 16);
    const { floors } = ctx;
    for (const spec of [post([floors.pipeline]), ...(floors.projected ? [post([floors.projected])] : []), steers(warmTurns)]) await client.run({ ...spec, clients: warmTurns.length, each: WARM_64 });
    await projectorCaughtUp();
    await floors.projectedCaughtUp?.();
    process.stderr.write('bench: steer accept with 64 clients\n');
    const concurrent = await interleavedLoad(
      client,
      {
        pipeline: { spec: post([floors.pipeline]), processes: { front: one(floors.pids.pipeline), responder: one(floors.pids.responder), nats: one(nats) } },
        // The same pipeline with a bare read side: its projector and that one's PostgreSQL backend
        // in the keys of persistence and PostgreSQL, read once it caught up, as the steers' are.
        ...(floors.projected && {
          projected: {
            spec: post([floors.projected]),
            processes: { front: one(floors.pids.pipeline), responder: one(floors.pids.responder), nats: one(nats), persistence: one(floors.pids.projector), postgres: one(floors.pids.projectorDb) },
            settle: floors.projectedCaughtUp,
            count: floors.projectedCounts,
          },
        }),
        steer: {
          spec: steers(turns),
          processes: { front: one(ctx.pids.gateway), responder: one(ctx.pids.engine), nats: one(nats), persistence: one(ctx.pids.persistence), postgres: backends },
          settle: projectorCaughtUp,
          count: counters,
        },
      },
      3,
      turns.length,
      20,
    );
    // The log as the read side projected it (before the cancels below add their own events): the batch path replays it.
    const log: LogMessage[] = (await readSubject(jetstream(ctx.nc), jsm, s.stream, s.events)).map((e) => ({ streamSeq: e.streamSeq, subject: e.subject, loggedAt: e.event.at, data: encodeEvent(e.event) }));
    await pool([...few, ...warmTurns, ...turns].map((tid) => () => fetch(`${api}/turns/${tid}/cancel`, { method: 'POST' })), 16);
    return { sequential, concurrent, natsFound: nats !== undefined, log };
  } finally {
    await client.close();
    await admin.end();
  }
}

export type Accept = Awaited<ReturnType<typeof measureSteerAccept>>;

/**
 * The projector's batch path per event: its wall time (µs) and its CPU (µs: the bench process's and
 * its PostgreSQL backends'), with 500-event batches, with batches of the size committed under live
 * load, and on the log the live run appended.
 */
export interface BatchPath {
  full: number;
  fullCpu?: number;
  atLive?: { size: number; us: number; cpu?: number };
  /** The batch path applying the very log the live run appended (its CPU per event, 500 per batch). */
  sameEvents?: { events: number; cpu?: number };
}

const usPerEvent = (rounds: ProjectorBenchRound[]) => 1e6 / median(rounds.map((r) => r.projectorEventsPerSecond));
const cpuPerEvent = (rounds: ProjectorBenchRound[]) => {
  const cpu = rounds.flatMap((r) => (r.projectorCpuUsPerEvent === undefined ? [] : [r.projectorCpuUsPerEvent]));
  return cpu.length ? median(cpu) : undefined;
};

/**
 * The batch path at the live batch size: what the read side's cost under load is made of when it
 * batches as it did (`full`: the 500-event rounds, run elsewhere or here on a short run).
 */
export async function measureBatchPath(databaseUrl: string, accept: Accept, full?: ProjectorBenchRound[]): Promise<BatchPath> {
  full ??= await benchProjector({ databaseUrl, events: 5_000, warmupEvents: 5_000, cpuMs });
  const replayed = await benchProjector({ databaseUrl, log: accept.log, warmupEvents: 5_000, cpuMs });
  const path: BatchPath = { full: usPerEvent(full), fullCpu: cpuPerEvent(full), sameEvents: { events: accept.log.length, cpu: cpuPerEvent(replayed) } };
  const { batches, batched } = accept.concurrent.steer.counted;
  const size = Math.round(batched / batches);
  if (!(size >= 1 && size < 500)) return path;
  const live = await benchProjector({ databaseUrl, events: Math.min(5_000, size * 200), warmupEvents: 2_000, batchSize: size, rounds: 1, cpuMs });
  return { ...path, atLive: { size, us: usPerEvent(live), cpu: cpuPerEvent(live) } };
}

/**
 * A row measured by the load client: besides its own target (if any), it fails when the client
 * used more than half a core in any of the phases it is made of (then the figure is the client's).
 */
function clientBound(phases: Phase[], inner?: string | Target): Target {
  const own = typeof inner === 'string' ? parseTarget(inner) : inner;
  const cheap = phases.every((p) => p.clientCores <= CLIENT_CORE_LIMIT);
  return { text: own ? `${own.text}, client ≤ ½ core` : 'client ≤ ½ core', met: (v, f) => cheap && (own?.met(v, f) ?? true) };
}

const sum = (cpu: Record<string, number>, keys: string[]) => keys.reduce((t, k) => t + (cpu[k] ?? 0), 0);

/**
 * The pipeline with a bare read side (floor.ts `projector`): what a steer costs at the least when its
 * event is also projected into PostgreSQL, which the pipeline the targets hold steers against does not do.
 */
function projectedRows(p: Phase): Row[] {
  const bound = { target: clientBound([p]) };
  const name = 'pipeline with a bare projector (pull consumer, one INSERT and a checkpoint per batch), 64 clients';
  return [
    { group: 'raw', name, value: p.perSecond, unit: 'req/s', ...bound },
    { group: 'raw', name: `${name}: CPU per 1 000 requests, total`, value: sum(p.cpuPer1000, ['front', 'responder', 'nats', 'persistence', 'postgres']), unit: 'ms' },
    { group: 'raw', name: `${name}: CPU per 1 000 requests, nats-server`, value: p.cpuPer1000.nats, unit: 'ms' },
    { group: 'raw', name: `${name}: CPU per 1 000 requests, bare projector`, value: p.cpuPer1000.persistence, unit: 'ms' },
    { group: 'raw', name: `${name}: CPU per 1 000 requests, its PostgreSQL backend`, value: p.cpuPer1000.postgres, unit: 'ms' },
    { group: 'raw', name: `${name}: events per committed batch, mean`, value: p.counted.batched / p.counted.batches, unit: 'msgs' },
  ];
}

/**
 * The raw hops and the floors, then steer accept held against the composed raw pipeline, the
 * client's CPU, and the CPU budget per steer; the read side's cost under live load is held against
 * the projector's batch path.
 */
export function floorRows(raw: RawBaselines, accept: Accept, batchPath?: BatchPath): Row[] {
  const { bare, healthz, pipeline, steer } = accept.sequential;
  const pipe64 = accept.concurrent.pipeline;
  const steer64 = accept.concurrent.steer;
  const projected64 = accept.concurrent.projected as Phase | undefined;
  const name = 'raw pipeline';
  const bound = (phases: Phase[], inner?: string | Target) => ({ target: clientBound(phases, inner) });
  const servers = ['front', 'responder', 'nats', 'persistence', 'postgres'];
  const pipeTotal = sum(pipe64.cpuPer1000, servers);
  const steerTotal = sum(steer64.cpuPer1000, servers);
  const { events, batches, batched } = steer64.counted;
  const readSideUs = ((steer64.cpuPer1000.persistence + steer64.cpuPer1000.postgres) * steer64.requests) / Math.max(1, events);
  const nats = accept.natsFound ? '' : ' (nats-server not found: n/a)';
  const cpuRow = (label: string, key: string, floorKey?: string, floorName?: string): Row => ({
    group: 'steerline',
    name: `CPU per 1 000 steers, 64 clients: ${label}`,
    value: steer64.cpuPer1000[key],
    unit: 'ms',
    ...(floorKey ? { floor: pipe64.cpuPer1000[floorKey], floorName } : {}),
  });
  return [
    { group: 'raw', name: 'bare node:http keep-alive round trip, p50', value: bare.p50, unit: 'ms', ...bound([bare]) },
    { group: 'raw', name: 'core NATS request/reply, p50', value: raw.natsRequestMs.p50, unit: 'ms' },
    { group: 'raw', name: 'JetStream publish → ack, sequential, p50', value: raw.jsAckMs.p50, unit: 'ms' },
    { group: 'raw', name: 'JetStream publish, 64 acks in flight', value: raw.jsWindowedPerSecond, unit: 'msg/s' },
    { group: 'raw', name: 'PostgreSQL batched INSERT (500 rows/tx)', value: raw.pgBatchedRowsPerSecond, unit: 'rows/s' },
    { group: 'raw', name: 'pipeline: bare HTTP POST → NATS request → bare responder → JS publish, ack → reply, 1 client, p50', value: pipeline.p50, unit: 'ms', ...bound([pipeline]) },
    { group: 'raw', name: 'pipeline, 1 client, p99', value: pipeline.p99, unit: 'ms', ...bound([pipeline]) },
    { group: 'raw', name: 'pipeline, 64 clients, p50', value: pipe64.p50, unit: 'ms', ...bound([pipe64]) },
    { group: 'raw', name: 'pipeline, 64 clients', value: pipe64.perSecond, unit: 'req/s', ...bound([pipe64]) },
    { group: 'raw', name: `pipeline, 64 clients: CPU per 1 000 requests, HTTP front / NATS responder / nats-server${nats}`, value: pipeTotal, unit: 'ms' },
    { group: 'raw', name: 'pipeline, 64 clients: CPU per 1 000 requests, HTTP front', value: pipe64.cpuPer1000.front, unit: 'ms' },
    { group: 'raw', name: 'pipeline, 64 clients: CPU per 1 000 requests, NATS responder', value: pipe64.cpuPer1000.responder, unit: 'ms' },
    { group: 'raw', name: 'pipeline, 64 clients: CPU per 1 000 requests, nats-server', value: pipe64.cpuPer1000.nats, unit: 'ms' },
    ...(projected64 ? projectedRows(projected64) : []),
    ...(
      [
        ['bare node:http', bare],
        ['gateway /healthz', healthz],
        ['raw pipeline, 1 client', pipeline],
        ['steer accept, 1 client', steer],
        ['raw pipeline, 64 clients', pipe64],
        ['steer accept, 64 clients', steer64],
        ...(projected64 ? [['pipeline with a bare projector, 64 clients', projected64] as const] : []),
      ] as const
    ).map(([label, p]): Row => ({ group: 'steerline', name: `load client CPU while measuring ${label} (share of one core)`, value: p.clientCores * 100, unit: '%', target: `≤ ${CLIENT_CORE_LIMIT * 100} %` })),
    { group: 'steerline', name: 'gateway GET /healthz round trip (its HTTP framework and middleware), p50', value: healthz.p50, unit: 'ms', floor: bare.p50, floorName: 'bare node:http', ...bound([healthz, bare]) },
    { group: 'steerline', name: 'steer accept, 1 client, p50', value: steer.p50, unit: 'ms', floor: pipeline.p50, floorName: name, ...bound([steer, pipeline], '≤ 2×') },
    { group: 'steerline', name: 'steer accept, 1 client, p99', value: steer.p99, unit: 'ms', floor: pipeline.p99, floorName: `${name} p99`, ...bound([steer, pipeline]) },
    { group: 'steerline', name: 'steer accept, 64 clients, p50', value: steer64.p50, unit: 'ms', floor: pipe64.p50, floorName: `${name}, 64 clients`, ...bound([steer64, pipe64]) },
    { group: 'steerline', name: 'steer accept, 64 clients, p99', value: steer64.p99, unit: 'ms', ...bound([steer64]) },
    { group: 'steerline', name: 'steers accepted per second, 64 clients', value: steer64.perSecond, unit: 'steers/s', floor: pipe64.perSecond, floorName: `${name}, 64 clients`, ...bound([steer64, pipe64], '≥ 0.5×') },
    cpuRow('gateway', 'front', 'front', 'bare HTTP front'),
    cpuRow('engine', 'responder', 'responder', 'bare NATS responder'),
    cpuRow(`nats-server${nats}`, 'nats', 'nats', 'same, pipeline'),
    cpuRow('persistence', 'persistence'),
    cpuRow('PostgreSQL (the backends of the bench’s database)', 'postgres'),
    { group: 'steerline', name: 'CPU per 1 000 steers, 64 clients: total of the servers', value: steerTotal, unit: 'ms', floor: pipeTotal, floorName: `${name}'s total`, target: ratioIs('≤', 2) },
    ...(projected64
      ? [
          { group: 'steerline', name: 'same, against the pipeline with a bare projector', value: steerTotal, unit: 'ms', floor: sum(projected64.cpuPer1000, servers), floorName: 'its total' },
          { group: 'steerline', name: 'CPU per 1 000 steers, 64 clients: persistence + PostgreSQL', value: steer64.cpuPer1000.persistence + steer64.cpuPer1000.postgres, unit: 'ms', floor: projected64.cpuPer1000.persistence + projected64.cpuPer1000.postgres, floorName: 'bare projector + its PostgreSQL backend' },
          { group: 'steerline', name: 'steers accepted per second, 64 clients, against the pipeline with a bare projector', value: steer64.perSecond, unit: 'steers/s', floor: projected64.perSecond, floorName: 'that pipeline, 64 clients', ...bound([steer64, projected64]) },
        ] satisfies Row[]
      : []),
    { group: 'steerline', name: 'CPU per 1 000 steers, 64 clients: the load client (not in the total)', value: steer64.cpuPer1000.client, unit: 'ms', floor: pipe64.cpuPer1000.client, floorName: 'same, pipeline' },
    { group: 'steerline', name: `events appended per steer (64 clients)`, value: events / steer64.requests, unit: 'events' },
    { group: 'steerline', name: 'projector batch under live load (64 clients): log messages per committed batch, mean', value: batched / batches, unit: 'msgs' },
    // CPU against CPU, on the same events: the live figure is the two processes' CPU, and so is the
    // batch path's, applying the log the live run appended (500 per batch).
    {
      group: 'steerline',
      name: 'read side under live load (64 clients): persistence + PostgreSQL CPU per event appended',
      value: readSideUs,
      unit: 'µs',
      ...(batchPath?.sameEvents?.cpu
        ? { floor: batchPath.sameEvents.cpu, floorName: `projector batch path on the same log (${batchPath.sameEvents.events} events, 500 per batch): its process + PostgreSQL CPU per event`, target: '≤ 2×' }
        : {}),
    },
    ...(batchPath?.fullCpu ? [{ group: 'steerline', name: 'same, against the batch path on synthetic turns (a tool step, a steer, an answer; 500 per batch), CPU per event', value: readSideUs, unit: 'µs', floor: batchPath.fullCpu, floorName: 'that batch path, CPU per event' } satisfies Row] : []),
    ...(batchPath ? [{ group: 'steerline', name: 'same, against the synthetic batch path’s wall time per event (500 per batch)', value: readSideUs, unit: 'µs', floor: batchPath.full, floorName: 'batch path, wall time per event' } satisfies Row] : []),
    ...(batchPath?.atLive?.cpu
      ? [{ group: 'steerline', name: `same, against the batch path with batches of ${batchPath.atLive.size} (the live batch size)`, value: readSideUs, unit: 'µs', floor: batchPath.atLive.cpu, floorName: 'that batch path, CPU per event' } satisfies Row]
      : []),
  ];
}

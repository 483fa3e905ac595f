/**
 * Where a steer's time goes, hop by hop (a profiling aid for `npm run bench`):
 *
 *   npm run -s build && node dist/scripts/bench/probe-steer.js
 *
 * Starts engine and gateway (persistence too with PROBE_PERSISTENCE=1) and the bare
 * floor processes (floor.ts), then runs, in ROUNDS interleaved rounds so drift on a
 * shared machine hits each alike: the gateway's GET /healthz, a bare node:http GET, a
 * steer sent straight to the engine over NATS, the raw pipeline (bare HTTP → NATS →
 * bare responder → JetStream ack), and a steer through the gateway. For each: the p50
 * wall time, and the CPU time per request of every process on the path (gateway or
 * bare server, engine or bare responder, nats-server, this client) read from
 * /proc/<pid>/stat — CPU time, unlike wall time, hardly moves with the machine's load.
 * `BENCH_PROFILE=<dir>` writes each app's CPU profile there (profile-summary.ts reads them);
 * `PROBE_TURNS` (100) running turns share the steers; `PROBE_ONLY=<words>` runs only the paths whose name contains them; `PROBE_B_ENV="NAME=value,…"`
 * starts a second gateway with those variables, `PROBE_B_DIST=<dir>` one from another build's dist/
 * (e.g. a checkout of the code before a change), and interleaves its paths with the first's.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { subjects } from '@steerline/contracts';
import { connectNats, request } from '@steerline/runtime';
import { spawnApp, tearDown } from './processes';
import { get, post, startFloors, type FloorServers } from './raw';
import { cpuMs, median, timeEach } from './stats';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_SERVER = 'postgres://postgres@127.0.0.1:5432';
const TURNS = Number(process.env.PROBE_TURNS ?? 100);
const PER_ROUND = Number(process.env.PROBE_N ?? 500);
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 3);
function natsServerPid(): number | undefined {
  try {
    return Number(execFileSync('pgrep', ['-o', '-x', 'nats-server']).toString().trim()) || undefined;
  } catch {
    return undefined;
  }
}

async function main() {
  const prefix = `probe${randomBytes(3).toString('hex')}`;
  const database = `steerline_${prefix}`;
  const env = { NATS_URL, STEERLINE_PREFIX: prefix, PORT: '0', STEERLINE_RATE_LIMIT: '0', DATABASE_URL: `${PG_SERVER}/${database}` };
  const children: ChildProcess[] = [];
  const nc = await connectNats(NATS_URL, 'probe');
  let floors: FloorServers | undefined;
  const s = subjects(prefix);
  try {
    const persistence = process.env.PROBE_PERSISTENCE ? await spawnApp('persistence', env) : undefined;
    if (persistence) children.push(persistence.child);
    const engine = await spawnApp('engine', env);
    const gateway = await spawnApp('gateway', env);
    children.push(engine.child, gateway.child);
    // PROBE_B_ENV="NAME=value,…": a second gateway with these variables, its paths interleaved with the first's (an A/B).
    const bEnv = Object.fromEntries((process.env.PROBE_B_ENV ?? '').split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
    // PROBE_B_DIST=<another build's dist>: the second gateway is that build's (e.g. the code before a change).
    const gatewayB = process.env.PROBE_B_ENV || process.env.PROBE_B_DIST ? await spawnApp('gateway', { ...env, ...bEnv }, process.env.PROBE_B_DIST && join(process.env.PROBE_B_DIST, 'apps/gateway/src/main.js')) : undefined;
    if (gatewayB) children.push(gatewayB.child);
    floors = await startFloors({ natsUrl: NATS_URL, prefix, nc });
    const { bare, pipeline } = floors;

    const call = <T>(subj: string, body: unknown) => request<T>(nc, subj, body, { timeoutMs: 5000, noResponders: 'unavailable' });
    const model = { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 600000 } } }] };
    const turns: string[] = [];
    for (let i = 0; i < TURNS; i++) {
      const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
      turns.push((await call<{ turnId: string }>(s.startTurn, { tenantId: 'default', conversationId: id, prompt: 'p', model, limits: { maxQueued: 1000 } })).turnId);
    }
    const turn = (i: number) => turns[i % TURNS];
    const gw = String(gateway.ready.url);
    const nats = natsServerPid();
    const gwB = String(gatewayB?.ready.url);
    const pids = { gateway: gateway.child.pid, gatewayB: gatewayB?.child.pid, engine: engine.child.pid, persistence: persistence?.child.pid, ...floors.pids, nats, client: process.pid };
    type Way = { name: string; on: (keyof typeof pids)[]; run: (i: number) => Promise<unknown> };
    const ways: Way[] = [
      { name: 'bare node:http GET', on: ['bare', 'client'], run: () => get(bare) },
      { name: 'gateway GET /healthz', on: ['gateway', 'client'], run: () => get(`${gw}/healthz`) },
      { name: 'raw pipeline POST', on: ['pipeline', 'responder', 'nats', 'client'], run: () => post(pipeline) },
      { name: 'steer, NATS straight to the engine', on: ['engine', 'persistence', 'nats', 'client'], run: (i) => call(s.turnSteer(turn(i)), { tenantId: 'default', text: 'a steer of ordinary length, about sixty characters' }) },
      { name: 'steer through the gateway', on: ['gateway', 'engine', 'persistence', 'nats', 'client'], run: (i) => post(`${gw}/v1/turns/${turn(i)}/steers`) },
      ...(gatewayB
        ? ([
            { name: 'gateway B GET /healthz', on: ['gatewayB', 'client'], run: () => get(`${gwB}/healthz`) },
            { name: 'steer through gateway B', on: ['gatewayB', 'engine', 'persistence', 'nats', 'client'], run: (i) => post(`${gwB}/v1/turns/${turn(i)}/steers`) },
          ] satisfies Way[])
        : []),
    ];
    // PROBE_ONLY=<words>: only the paths whose name has them (for a CPU profile of one path).
    if (process.env.PROBE_ONLY) ways.splice(0, ways.length, ...ways.filter((w) => w.name.includes(process.env.PROBE_ONLY!)));
    // Warm-up: the gateway's code is still being optimised after a thousand steers.
    for (const way of ways) await timeEach(way.name.startsWith('steer') ? 1500 : 500, way.run);
    const wall: Record<string, number[]> = {};
    const cpu: Record<string, Record<string, number>> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const way of ways) {
        const before = way.on.map((p) => cpuMs(pids[p]));
        (wall[way.name] ??= []).push(...(await timeEach(PER_ROUND, way.run)));
        way.on.forEach((p, k) => {
          const per = cpu[way.name] ?? (cpu[way.name] = {});
          per[p] = (per[p] ?? 0) + (cpuMs(pids[p]) - before[k]) / (PER_ROUND * ROUNDS);
        });
      }
    }
    const cols = (Object.keys(pids) as (keyof typeof pids)[]).filter((p) => pids[p] !== undefined);
    console.log(`${ROUNDS} rounds × ${PER_ROUND}, ${process.env.PROBE_PERSISTENCE ? 'with' : 'without'} persistence; CPU ms per request by process; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
    console.log(`| path | p50 wall | ${cols.join(' | ')} |`);
    console.log(`| --- | ---: | ${cols.map(() => '---:').join(' | ')} |`);
    for (const way of ways) {
      const row = cols.map((c) => (cpu[way.name]?.[c] === undefined ? '' : cpu[way.name][c].toFixed(3)));
      console.log(`| ${way.name} | ${median(wall[way.name]).toFixed(3)} ms | ${row.join(' | ')} |`);
    }
    for (const tid of turns) await call(s.cancel(tid), { tenantId: 'default' });
  } finally {
    await floors?.close();
    await tearDown({ children, nc, prefix, pgServer: PG_SERVER, database, signal: 'SIGTERM' });
    await nc.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);

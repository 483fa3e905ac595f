/**
 * Splits a steer's accept latency into its hops (a profiling aid for `npm run bench`):
 * a steer sent straight to the engine over NATS, the same through the gateway, and
 * `GET /healthz`. `PROBE_PERSISTENCE=1` also runs persistence, projecting every
 * steer as it comes; `BENCH_PROFILE=<dir>` writes each process's CPU profile there.
 */
import { randomBytes } from 'node:crypto';
import { connectNats, request, subjects } from '@steerline/contracts';
import { deleteStreams, dropDatabase, spawnApp, stop } from './processes';
import { median, timeEach } from './stats';

const PG_SERVER = 'postgres://postgres@127.0.0.1:5432';
const TURNS = 20;
const STEERS = 400;

async function main() {
  const prefix = `probe${randomBytes(3).toString('hex')}`;
  const database = `steerline_${prefix}`;
  const env = { STEERLINE_PREFIX: prefix, PORT: '0', STEERLINE_RATE_LIMIT: '0', DATABASE_URL: `${PG_SERVER}/${database}` };
  const apps = [];
  const nc = await connectNats('nats://127.0.0.1:4222', 'probe');
  const s = subjects(prefix);
  try {
    if (process.env.PROBE_PERSISTENCE) apps.push(await spawnApp('persistence', env));
    apps.push(await spawnApp('engine', env));
    const gateway = await spawnApp('gateway', env);
    apps.push(gateway);
    const call = <T>(subj: string, body: unknown) => request<T>(nc, subj, body, { timeoutMs: 5000, noResponders: 'unavailable' });
    // Steers spread over several turns, as in the bench: a turn holds a realistic number of them.
    const model = { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 600000 } } }] };
    const turns: string[] = [];
    for (let i = 0; i < TURNS; i++) {
      const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
      turns.push((await call<{ turnId: string }>(s.startTurn, { tenantId: 'default', conversationId: id, prompt: 'p', model, limits: { maxQueued: 1000 } })).turnId);
    }
    const turn = (i: number) => turns[i % TURNS];
    const api = `${gateway.ready.url}/v1`;
    const viaHttp = (i: number) =>
      fetch(`${api}/turns/${turn(i)}/steers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":"via http"}' }).then((r) => r.text());
    await timeEach(100, viaHttp);
    const direct = await timeEach(STEERS, (i) => call(s.turnSteer(turn(i)), { tenantId: 'default', text: 'direct' }));
    const http = await timeEach(STEERS, viaHttp);
    const health = await timeEach(STEERS, () => fetch(`${gateway.ready.url}/healthz`).then((r) => r.text()));
    const ms = (samples: number[]) => `${median(samples).toFixed(3)} ms`;
    console.log(`${process.env.PROBE_PERSISTENCE ? 'with' : 'without'} persistence: direct NATS steer p50 ${ms(direct)}; via gateway p50 ${ms(http)}; healthz p50 ${ms(health)}`);
    for (const tid of turns) await call(s.cancel(tid), { tenantId: 'default' });
  } finally {
    for (const app of apps.reverse()) await stop(app.child, 'SIGTERM');
    await deleteStreams(nc, prefix);
    await nc.close();
    await dropDatabase(PG_SERVER, database);
  }
}
main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);

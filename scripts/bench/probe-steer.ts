/** Splits a steer's accept latency into its hops (a profiling aid for `npm run bench`). */
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats, request, subjects } from '@steerline/contracts';
import { spawnApp, stop } from './processes';
import { median, timeEach } from './stats';

async function main() {
  const prefix = `probe${randomBytes(3).toString('hex')}`;
  const env = { STEERLINE_PREFIX: prefix, PORT: '0', STEERLINE_RATE_LIMIT: '0', DATABASE_URL: `postgres://postgres@127.0.0.1:5432/steerline_${prefix}` };
  const engine = await spawnApp('engine', env);
  const gateway = await spawnApp('gateway', env).catch(async (err: unknown) => {
    await stop(engine.child);
    throw err;
  });
  const nc = await connectNats('nats://127.0.0.1:4222', 'probe');
  const s = subjects(prefix);
  try {
    const call = <T>(subj: string, body: unknown) => request<T>(nc, subj, body, { timeoutMs: 5000, noResponders: 'unavailable' });
    const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
    const model = { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 600000 } } }] };
    const { turnId } = await call<{ turnId: string }>(s.startTurn, { tenantId: 'default', conversationId: id, prompt: 'p', model, limits: { maxQueued: 1000 } });
    await timeEach(50, () => call(s.turnSteer(turnId), { tenantId: 'default', text: 'warm' }));
    const direct = await timeEach(400, () => call(s.turnSteer(turnId), { tenantId: 'default', text: 'direct' }));
    const api = `${gateway.ready.url}/v1`;
    const http = await timeEach(400, () => fetch(`${api}/turns/${turnId}/steers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":"via http"}' }).then((r) => r.text()));
    const health = await timeEach(400, () => fetch(`${gateway.ready.url}/healthz`).then((r) => r.text()));
    console.log(`direct NATS steer p50 ${median(direct).toFixed(3)} ms; via gateway p50 ${median(http).toFixed(3)} ms; healthz p50 ${median(health).toFixed(3)} ms`);
    await call(s.cancel(turnId), { tenantId: 'default' });
  } finally {
    await stop(gateway.child);
    await stop(engine.child);
    const jsm = await jetstreamManager(nc);
    for (const stream of [s.stream, `KV_${s.turnsBucket}`, `KV_${s.enginesBucket}`]) await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  }
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });

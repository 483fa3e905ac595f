import { request, type StoredEvent } from '@steerline/runtime';
import { createTestDatabase, eventually, openNats, uniquePrefix, type NatsHandle } from '../support/env';
import { OwnNatsServer, ServiceProcess } from '../support/processes';

/**
 * Issue 27: an answer over NATS's max_payload used to throw out of the
 * persistence responder and kill the process. On a server whose max_payload
 * is 128 KiB, a turn whose prompt, script and answer each fit in an event but
 * not together in one read model makes the read side's answers too large:
 * each gets a typed 413, and every service keeps serving and projecting.
 */
describe('answers too large for NATS', () => {
  const MAX_PAYLOAD = 128 * 1024;
  let server: OwnNatsServer;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let nats: NatsHandle;
  const apps: ServiceProcess[] = [];
  let url: string;

  beforeAll(async () => {
    server = await OwnNatsServer.start({ maxPayload: MAX_PAYLOAD });
    db = await createTestDatabase();
    const prefix = uniquePrefix();
    const env = { NATS_URL: server.url, STEERLINE_PREFIX: prefix, DATABASE_URL: db.url, PORT: '0', STEERLINE_RATE_LIMIT: '0' };
    const persistence = new ServiceProcess('persistence', env);
    apps.push(persistence);
    await persistence.ready();
    const engine = new ServiceProcess('engine', env);
    apps.push(engine);
    await engine.ready();
    const gateway = new ServiceProcess('gateway', env);
    apps.push(gateway);
    url = String((await gateway.ready()).url);
    nats = await openNats(prefix, server.url);
  });
  afterAll(async () => {
    for (const app of apps) await app.kill();
    await nats?.close();
    await db?.drop();
    await server?.destroy();
  });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/v1${path}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
    return { status: res.status, body: (await res.json()) as any };
  };
  const turnEnded = (turnId: string) =>
    eventually(async () => {
      const events: StoredEvent[] = (await nats.readAll()).filter((e) => e.event.turnId === turnId);
      return ['TurnCompleted', 'TurnFailed'].includes(events.at(-1)?.event.type ?? '') ? events : undefined;
    }, 20_000, `turn ${turnId} to end`);

  async function runTurn(prompt: string, answer: string) {
    const cid = (await api('POST', '/conversations')).body.id as string;
    const start = await api('POST', `/conversations/${cid}/turns`, { prompt, model: { provider: 'scripted', script: [{ text: answer }] } });
    expect(start.status).toBe(202);
    const events = await turnEnded(start.body.turnId);
    return { cid, tid: start.body.turnId as string, events };
  }

  it('each read answer too large is a typed 413; the services keep serving and the projector keeps projecting', async () => {
    const big = await runTurn('p'.repeat(50_000), 'a'.repeat(50_000));
    expect(big.events.at(-1)!.event.type).toBe('TurnCompleted');
    const seq = (await nats.jsm.streams.info(nats.s.stream)).state.last_seq;
    await eventually(async () => ((await request<{ checkpoint: number }>(nats.nc, nats.s.queryHealth, {}, { timeoutMs: 2000, noResponders: 'unavailable' })).checkpoint >= seq) || undefined, 20_000, 'the projection');

    // Queries that cannot be answered, again and again, while another turn runs and is projected.
    const failing = Array.from({ length: 10 }, (_, i) => api('GET', i % 2 ? `/turns/${big.tid}` : `/conversations/${big.cid}`));
    const small = await runTurn('small', 'fine');
    for (const res of await Promise.all(failing)) {
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ error: { code: 'payload_too_large' } });
    }
    const view = await eventually(async () => {
      const res = await api('GET', `/conversations/${small.cid}`);
      return res.status === 200 && res.body.turns[0]?.status === 'completed' ? res.body : undefined;
    }, 20_000, 'the second conversation to be projected');
    expect(view.messages.map((m: { content: string }) => m.content)).toEqual(['small', 'fine']);

    // A request larger than NATS carries is refused by the gateway before it is sent.
    const huge = await api('POST', `/conversations/${small.cid}/turns`, { prompt: '中'.repeat(60_000), model: { provider: 'scripted', script: [] } });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ error: { code: 'payload_too_large' } });

    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    for (const app of apps) expect(await Promise.race([app.exited.then(() => 'exited'), new Promise((r) => setTimeout(() => r('running'), 100))])).toBe('running');
    // Logged asynchronously: the line may reach the pipe after the 413 answers.
    await eventually(() => apps[0].lines.some((l) => l.includes('query failed') && l.includes('payload_too_large')) || undefined, 10_000, 'the failed queries to be logged');
  });
});

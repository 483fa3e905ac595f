import { checkInvariants, decodeEvent, isTerminalTurnEvent } from '@steerline/contracts';
import { connectNats, jetstreamManager, type StoredEvent } from '@steerline/runtime';
import { StorageType } from '@nats-io/jetstream';
import { createTestDatabase, eventually, openNats, uniquePrefix, type NatsHandle } from '../support/env';
import { NatsCluster, ServiceProcess, freePort } from '../support/processes';
import { scrape, total } from '../support/prometheus';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

function client(base: string): Api {
  return async (method, path, body) => {
    const res = await fetch(`${base}/v1${path}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
}

describe('scale-out: a 3-node NATS cluster, two of each service, under load', () => {
  const prefix = uniquePrefix();
  let cluster: NatsCluster;
  let nats: NatsHandle;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const services: ServiceProcess[] = [];
  let env: Record<string, string>;

  async function service(app: 'engine' | 'gateway' | 'persistence', extra: Record<string, string> = {}) {
    const p = new ServiceProcess(app, { ...env, ...extra });
    services.push(p);
    await p.ready(60_000);
    return p;
  }

  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
    // JetStream is usable for three replicas once the meta leader knows every peer: placing one proves it.
    const probe = await connectNats(cluster.url, 'cluster-probe');
    const probeStream = `PROBE_${prefix.toUpperCase()}`;
    await eventually(
      async () => {
        const jsm = await jetstreamManager(probe);
        await jsm.streams.add({ name: probeStream, subjects: [`${prefix}.probe`], num_replicas: 3, storage: StorageType.Memory });
        await jsm.streams.delete(probeStream);
        return true;
      },
      60_000,
      'the JetStream cluster to place three replicas',
    );
    await probe.close();
    db = await createTestDatabase();
    env = { NATS_URL: cluster.url, STEERLINE_PREFIX: prefix, DATABASE_URL: db.url, STEERLINE_STREAM_REPLICAS: '3', STEERLINE_ENGINE_LEASE_MS: '2000', STEERLINE_RATE_LIMIT: '0', STEERLINE_PARTITIONS: '4' };
  });
  afterAll(async () => {
    await Promise.all(services.map((s) => s.kill()));
    await nats?.close().catch(() => undefined);
    await cluster?.destroy();
    await db?.drop();
  });

  /** The whole stream by direct gets: no consumer, which a cluster with a dead node may fail to place. */
  async function readAllDirect(): Promise<StoredEvent[]> {
    const info = await nats.jsm.streams.info(nats.s.stream);
    const out: StoredEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await nats.jsm.direct.getMessage(nats.s.stream, { seq });
      const decoded = m ? decodeEvent(m.data) : undefined;
      if (m && decoded?.ok) out.push({ streamSeq: m.seq, subject: m.subject, event: decoded.event });
    }
    return out;
  }

  it('killing one NATS node, one engine, one gateway and one persistence instance in turn under load leaves a clean audit, complete read models (four partitions), and counters that match the log', async () => {
    // Engines first: they create the stream at three replicas.
    const metricsPorts = [await freePort(), await freePort()];
    const engines = [
      await service('engine', { STEERLINE_ENGINE_ID: 'engine-1', METRICS_PORT: String(metricsPorts[0]) }),
      await service('engine', { STEERLINE_ENGINE_ID: 'engine-2' }),
    ];
    // Four partitions on two instances: the kill below leaves the survivor to take the dead one's.
    const persistence = [await service('persistence', { METRICS_PORT: String(metricsPorts[1]) }), await service('persistence')];
    const ports = [await freePort(), await freePort()];
    const gateways = [await service('gateway', { PORT: String(ports[0]) }), await service('gateway', { PORT: String(ports[1]) })];
    const apis = ports.map((p) => client(`http://127.0.0.1:${p}`));
    nats = await openNats(prefix, cluster.url);
    expect((await nats.jsm.streams.info(nats.s.stream)).config.num_replicas).toBe(3);

    const turns: { cid: string; tid: string }[] = [];
    for (let i = 0; i < 30; i++) {
      const api = apis[i % 2];
      const cid = (await api('POST', '/conversations')).body.id;
      const res = await api('POST', `/conversations/${cid}/turns`, {
        prompt: 'scale',
        // Long enough (≈ 6–8 s) to still be running when the last kill lands.
        model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 2500 + (i % 5) * 400 } } }, { tool: { name: 'sleep', args: { ms: 2000 } } }, { tool: { name: 'sleep', args: { ms: 1500 } } }] },
        limits: { maxQueued: 50 },
      });
      expect(res.status).toBe(202);
      turns.push({ cid, tid: res.body.turnId });
    }
    const accepted: string[] = [];
    // The gateways still up: clients of a killed one go to the other, as a load balancer would send them.
    const up = [0, 1];
    const sendRound = async (round: number) => {
      await Promise.all(turns.map(async ({ tid }, i) => {
        const res = await apis[up[(i + round) % up.length]]('POST', `/turns/${tid}/steers`, { text: `round ${round}` });
        if (res.status === 202 || res.status === 200) accepted.push(res.body.steerId);
        else expect([409, 503]).toContain(res.status);
      }));
    };
    await sendRound(0);
    await cluster.kill(2);
    await sendRound(1);
    await engines[1].kill();
    await sendRound(2);
    await gateways[1].kill();
    up.splice(1, 1);
    await sendRound(3);
    await persistence[1].kill();
    await pause(300);
    await sendRound(4);

    const tids = new Set(turns.map((t) => t.tid));
    let progress = '';
    const log: StoredEvent[] = await eventually(async () => {
      const all = await readAllDirect();
      const ended = all.filter((e) => tids.has(e.event.turnId ?? '') && isTerminalTurnEvent(e.event));
      const lastOf = new Map(all.filter((e) => tids.has(e.event.turnId ?? '')).map((e) => [e.event.turnId, e.event.type]));
      progress = `${ended.length}/${turns.length} ended; last events: ${JSON.stringify([...lastOf.values()].reduce<Record<string, number>>((a, t) => ({ ...a, [t]: (a[t] ?? 0) + 1 }), {}))}`;
      return ended.length === turns.length ? all : undefined;
    }, 120_000, 'every turn to end').catch((err: Error) => {
      throw new Error(`${err.message}; ${progress}\n${services.map((p) => `${p.app}: ${p.lines.filter((l) => /error|warn/i.test(l)).slice(-5).join('\n')}`).join('\n')}`);
    });
    expect(checkInvariants(log, { requireSettled: true })).toEqual([]);
    // The killed engine's turns were adopted by the other one (durable turns), not failed.
    expect(log.filter((e) => e.event.type === 'TurnResumed').length).toBeGreaterThan(0);
    expect(log.filter((e) => e.event.type === 'TurnFailed')).toEqual([]);
    const queuedInLog = new Set(log.flatMap((e) => (e.event.type === 'SteerQueued' ? [e.event.data.steerId] : [])));
    for (const id of accepted) expect(queuedInLog.has(id)).toBe(true);

    // Read models are complete: every steer of the log, with its final status, through the gateway still up.
    const status = new Map<string, string>();
    for (const { event } of log) {
      if (event.type === 'SteerQueued') status.set(event.data.steerId, 'queued');
      else if (event.type === 'SteeringDelivered') status.set(event.data.steerId, 'delivered');
      else if (event.type === 'SteerDropped') status.set(event.data.steerId, 'dropped');
    }
    let readProgress = '';
    await eventually(async () => {
      const seen = new Map<string, string>();
      for (const { cid } of turns) {
        const view = await apis[up[0]]('GET', `/conversations/${cid}`);
        if (view.status !== 200) return undefined;
        for (const s of view.body.steers) seen.set(s.id, s.status);
      }
      const wrong = [...status].filter(([id, st]) => seen.get(id) !== st).length;
      readProgress = `${seen.size}/${status.size} steers in the read models, ${wrong} not (yet) at their final status`;
      return wrong === 0 && seen.size === status.size ? true : undefined;
    }, 90_000, 'the read models to hold every steer with its final status').catch((err: Error) => {
      throw new Error(`${err.message}; ${readProgress}\n${persistence.map((p) => p.lines.filter((l) => /error|warn/i.test(l)).slice(-5).join('\n')).join('\n')}`);
    });

    // Counters where the facts are made: every resume was made by the surviving engine, and it counted each one;
    // the surviving persistence instance, holding every partition, has no lag left.
    const engineMetrics = await scrape(`http://127.0.0.1:${metricsPorts[0]}/metrics`);
    expect(total([engineMetrics], 'steerline_turns_resumed_total')).toBe(log.filter((e) => e.event.type === 'TurnResumed').length);
    await eventually(async () => total([await scrape(`http://127.0.0.1:${metricsPorts[1]}/metrics`)], 'steerline_projection_lag_events') === 0 || undefined, 30_000, 'the surviving projector to report no lag');
  }, 300_000);
});

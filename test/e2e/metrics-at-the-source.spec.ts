import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { isTerminalTurnEvent } from '@steerline/contracts';
import { type StoredEvent } from '@steerline/runtime';
import { createTestDatabase, eventually, NATS_URL, openNats, uniquePrefix, type NatsHandle } from '../support/env';
import { freePort, ServiceProcess } from '../support/processes';
import { scrape, total, type Sample } from '../support/prometheus';

type Api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: any }>;

const count = (events: StoredEvent[], type: string, where: (data: any) => boolean = () => true) => events.filter((e) => e.event.type === type && where(e.event.data)).length;

/**
 * Two engines and a persistence instance as real processes, each serving
 * /metrics on its METRICS_PORT: the engines' counters summed equal the log's
 * counts, and persistence counts what it projected.
 */
describe('metrics at the source: engines and persistence export what they make, and the sums are the log’s', () => {
  const prefix = uniquePrefix();
  let nats: NatsHandle;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const services: ServiceProcess[] = [];
  const engineUrls: string[] = [];
  let persistenceUrl: string;
  let api: Api;
  let gatewayUrl: string;

  async function service(app: 'engine' | 'gateway' | 'persistence', env: Record<string, string>) {
    const p = new ServiceProcess(app, { NATS_URL, STEERLINE_PREFIX: prefix, DATABASE_URL: db.url, STEERLINE_RATE_LIMIT: '0', ...env });
    services.push(p);
    await p.ready(30_000);
    return p;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    nats = await openNats(prefix);
    for (const id of ['metrics-engine-1', 'metrics-engine-2']) {
      const port = await freePort();
      await service('engine', { STEERLINE_ENGINE_ID: id, METRICS_PORT: String(port) });
      engineUrls.push(`http://127.0.0.1:${port}/metrics`);
    }
    // On a free port of its choosing, found where `npm start` tells people to look: its "… metrics at" line.
    const persistence = await service('persistence', { METRICS_PORT: '0' });
    const said = persistence.lines.map((l) => JSON.parse(l) as { message?: string; url?: string }).find((r) => r.message?.startsWith('persistence metrics at'));
    expect(said?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    persistenceUrl = said!.url!;
    const gatewayPort = await freePort();
    await service('gateway', { PORT: String(gatewayPort) });
    gatewayUrl = `http://127.0.0.1:${gatewayPort}/metrics`;
    api = async (method, path, body, headers = {}) => {
      const res = await fetch(`http://127.0.0.1:${gatewayPort}/v1${path}`, { method, headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...headers }, body: body ? JSON.stringify(body) : undefined });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
  }, 120_000);
  afterAll(async () => {
    await Promise.all(services.map((s) => s.kill()));
    await nats?.close();
    await db?.drop();
  });

  const engines = () => Promise.all(engineUrls.map((url) => eventually(() => scrape(url), 5_000, `${url} to answer`)));

  it('two engines’ counters summed equal the counts of the events in the log, whichever engine ran each turn', async () => {
    // Turns go to whichever engine answers the start first: start them until both engines run some.
    const turns: string[] = [];
    for (let i = 0; i < 40; i++) {
      const started = (await engines()).map((samples) => total([samples], 'steerline_turns_started_total'));
      if (turns.length >= 6 && started.every((n) => n >= 2)) break;
      const cid = (await api('POST', '/conversations')).body.id;
      // A tool step, a second one, an answer; every third turn calls a tool no one serves.
      const tool = i % 3 === 2 ? 'no_such_tool' : 'sleep';
      const script = [{ tool: { name: tool, args: { ms: 4000 } } }, { tool: { name: 'echo', args: { text: 'hi' } } }, { text: 'done' }];
      const res = await api('POST', `/conversations/${cid}/turns`, { prompt: `turn ${i}`, model: { provider: 'scripted', script } });
      expect(res.status).toBe(202);
      turns.push(res.body.turnId);
    }
    const live = (await engines()).map((samples) => total([samples], 'steerline_turns_live'));
    expect(live.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);

    // Steers on every turn: one waited for (delivered at the boundary), one withdrawn; one turn is cancelled.
    await Promise.all(
      turns.map(async (tid, i) => {
        const withdrawn = await api('POST', `/turns/${tid}/steers`, { text: 'never mind' });
        if (withdrawn.status === 202) await api('DELETE', `/turns/${tid}/steers/${withdrawn.body.steerId}`);
        if (i === 0) return api('POST', `/turns/${tid}/cancel`, {});
        return api('POST', `/turns/${tid}/steers`, { text: `keep going ${i}` }, { prefer: 'wait=10' });
      }),
    );
    const log = await eventually(async () => {
      const events = await nats.readAll();
      const ended = new Set(events.filter((e) => isTerminalTurnEvent(e.event)).map((e) => e.event.turnId));
      return turns.every((t) => ended.has(t)) ? events : undefined;
    }, 30_000, 'every turn to end');

    const scrapes = await engines();
    // Both engines did some of the work, and neither counted the other's.
    for (const samples of scrapes) expect(total([samples], 'steerline_turns_started_total')).toBeGreaterThan(0);
    expect(total(scrapes, 'steerline_turns_live')).toBe(0);

    const types = [...new Set(log.map((e) => e.event.type))];
    for (const type of types) expect([type, total(scrapes, 'steerline_events_appended_total', { type })]).toEqual([type, count(log, type)]);
    expect(total(scrapes, 'steerline_events_appended_total')).toBe(log.length);

    expect(total(scrapes, 'steerline_steers_accepted_total')).toBe(count(log, 'SteerQueued'));
    for (const boundary of ['tool_results', 'turn_end']) {
      expect([boundary, total(scrapes, 'steerline_steers_delivered_total', { boundary })]).toEqual([boundary, count(log, 'SteeringDelivered', (d) => d.boundary === boundary)]);
    }
    for (const reason of new Set(log.filter((e) => e.event.type === 'SteerDropped').map((e) => (e.event.data as { reason: string }).reason))) {
      expect([reason, total(scrapes, 'steerline_steers_dropped_total', { reason })]).toEqual([reason, count(log, 'SteerDropped', (d) => d.reason === reason)]);
    }
    expect(count(log, 'SteerDropped', (d) => d.reason === 'withdrawn')).toBeGreaterThan(0);
    expect(count(log, 'SteeringDelivered')).toBeGreaterThan(0);
    expect(total(scrapes, 'steerline_steer_delivery_seconds_count')).toBe(count(log, 'SteeringDelivered'));

    expect(total(scrapes, 'steerline_turns_started_total')).toBe(count(log, 'TurnStarted'));
    for (const outcome of ['completed', 'cancelled', 'failed']) {
      const type = `Turn${outcome[0].toUpperCase()}${outcome.slice(1)}`;
      expect([outcome, total(scrapes, 'steerline_turns_ended_total', { outcome })]).toEqual([outcome, count(log, type)]);
    }
    expect(count(log, 'TurnCancelled')).toBe(1);
    expect(total(scrapes, 'steerline_model_requests_total')).toBe(count(log, 'ModelRequested'));
    expect(total(scrapes, 'steerline_boundaries_total')).toBe(count(log, 'ModelRequested', (d) => d.step > 1));
    expect(total(scrapes, 'steerline_model_request_seconds_count')).toBe(count(log, 'ModelResponded'));
    for (const [tool, outcome, ok] of [['sleep', 'ok', true], ['echo', 'ok', true], ['no_such_tool', 'error', false]] as const) {
      const logged = count(log, 'ToolCallFinished', (d) => d.name === tool && d.ok === ok);
      expect([tool, total(scrapes, 'steerline_tool_call_seconds_count', { tool, outcome })]).toEqual([tool, logged]);
    }
    expect(count(log, 'ToolCallFinished', (d) => d.name === 'no_such_tool')).toBeGreaterThan(0);
    // The process's own figures come along, under the engine's prefix.
    expect(total(scrapes, 'steerline_engine_process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('persistence counts the events it applied, its batches and dead letters by reason, and its lag drops to 0', async () => {
    // A message no one can decode, on a conversation's subject: it is dead-lettered, not applied.
    const cid = (await api('POST', '/conversations')).body.id;
    const h = natsHeaders();
    await nats.js.publish(nats.s.conversationEvents('default', cid), new TextEncoder().encode('not json'), { headers: h });
    const info = await nats.jsm.streams.info(nats.s.stream);
    const log = await nats.readAll();

    const samples: Sample[] = await eventually(async () => {
      const s = await scrape(persistenceUrl);
      return total([s], 'steerline_projection_checkpoint') === info.state.last_seq && total([s], 'steerline_projection_lag_events') === 0 ? s : undefined;
    }, 20_000, 'persistence to project the whole log');
    expect(total([samples], 'steerline_projection_events_applied_total')).toBe(log.length);
    expect(total([samples], 'steerline_projection_dead_letters_total', { reason: 'not_json' })).toBe(1);
    expect(total([samples], 'steerline_projection_dead_letters_total')).toBe(1);
    // Every message of the stream was in one committed batch.
    expect(total([samples], 'steerline_projection_batch_size_sum')).toBe(info.state.messages);
    expect(total([samples], 'steerline_projection_batch_size_count')).toBeGreaterThan(0);
    expect(total([samples], 'steerline_projection_stalls_total')).toBe(0);
    expect(total([samples], 'steerline_persistence_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    // Anything but GET /metrics is not found.
    expect((await fetch(persistenceUrl.replace('/metrics', '/'))).status).toBe(404);
  });

  it('the Grafana dashboard in deploy/grafana queries only metrics some service exports', async () => {
    const dashboard = JSON.parse(readFileSync(join(__dirname, '../../deploy/grafana/steerline-dashboard.json'), 'utf8')) as { panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }> };
    const queries = dashboard.panels.filter((p) => p.type !== 'row').flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
    expect(queries.length).toBeGreaterThan(20);
    // What the services declare (`# TYPE name kind`), with the series a histogram adds.
    const exported = new Set<string>();
    for (const url of [...engineUrls, persistenceUrl, gatewayUrl]) {
      for (const [, name, kind] of (await (await fetch(url)).text()).matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
        exported.add(name);
        if (kind === 'histogram' || kind === 'summary') for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${name}${suffix}`);
      }
    }
    const unknown = queries.flatMap(({ panel, expr }) => [...expr.matchAll(/\bsteerline_[a-z0-9_]+/g)].map(([name]) => name).filter((name) => !exported.has(name)).map((name) => `${panel}: ${name}`));
    expect(unknown).toEqual([]);
    // Every service's own counters are on the board.
    for (const name of ['steerline_steers_accepted_total', 'steerline_turns_live', 'steerline_projection_lag_events', 'steerline_http_request_duration_seconds']) {
      expect(queries.some((q) => q.expr.includes(name))).toBe(true);
    }
  });
});

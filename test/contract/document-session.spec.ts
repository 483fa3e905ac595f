import { randomUUID } from 'node:crypto';
import { createLogger } from '@steerline/runtime';
import { startGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { eventually } from '../support/env';
import { scrape, total } from '../support/prometheus';
import { startStack, type Stack } from '../support/stack';
import { runExternalTurnSession } from './external-session';
import { PrismProxy, type Relayed } from './prism';
import { runSteeringScenario } from './scenario';

/**
 * The contract gate for the HTTP API: a steering session that reaches every
 * route, each answer relayed through Stoplight Prism's validation proxy, which
 * checks its status, headers and body against the OpenAPI document the gateway
 * itself serves. A route and its document cannot drift apart: a mismatch is a
 * violation here, and a route the session does not reach fails the coverage.
 */

const KEY = 'Bearer session-key';
const OTHER_TENANT = 'Bearer other-key';

type Doc = { paths: Record<string, Record<string, unknown>> };

let stack: Stack;
let prism: PrismProxy;
let doc: Doc;
const answers: Relayed[] = [];

async function send(method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; rawBody?: string } = {}): Promise<Relayed> {
  const answer = await prism.send(method, path, { ...init, headers: { Authorization: KEY, ...init.headers } });
  answers.push(answer);
  return answer;
}

/** The stack as the scenario drives it, every API call going through Prism. */
function throughPrism(s: Stack): Stack {
  return {
    ...s,
    async api(method, path, body, headers) {
      const r = await send(method, `/v1${path}`, { body, headers });
      return { status: r.status, body: r.text ? JSON.parse(r.text) : undefined, headers: r.headers };
    },
  };
}

/** `GET /v1/turns/0190…` → `GET /v1/turns/{tid}`: the document's operation the answer belongs to. */
function operationOf(doc: Doc, method: string, path: string): string | undefined {
  const bare = path.split('?')[0];
  const templates = Object.keys(doc.paths).filter((t) => new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}$`).test(bare));
  // A literal path wins over a template that also matches it.
  const best = templates.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))[0];
  return best && doc.paths[best][method.toLowerCase()] ? `${method.toUpperCase()} ${best}` : undefined;
}

beforeAll(async () => {
  stack = await startStack({ env: { STEERLINE_API_KEYS: `${KEY.slice(7)}:acme,${OTHER_TENANT.slice(7)}:globex` } });
  doc = (await (await fetch(`${stack.url}/docs/openapi.json`)).json()) as Doc;
  prism = await PrismProxy.start(doc, stack.url);
});
afterAll(async () => {
  await prism?.close();
  await stack?.close();
});

describe('a session through Prism’s validation proxy against the gateway’s own OpenAPI document', () => {
  it('gets answers that all match the document: a steering session, reads, refusals, agents, an external turn, operations and docs', async () => {
    const { turnIds, steers } = await runSteeringScenario(throughPrism(stack));
    const turnId = turnIds[0];
    const { conversationId } = JSON.parse((await send('GET', `/v1/turns/${turnId}`)).text) as { conversationId: string };

    // Reads.
    expect((await send('GET', '/v1/conversations?limit=2')).status).toBe(200);
    const conversation = await send('GET', `/v1/conversations/${conversationId}`);
    expect({ status: conversation.status, type: conversation.headers.get('content-type') }).toEqual({ status: 200, type: expect.stringMatching(/^application\/json/) });
    // The scenario's first steer was withdrawn (its receipt is a 409 steer_dropped), its second delivered.
    expect((await send('GET', `/v1/turns/${turnId}/steers/${steers[0].steerId}`)).status).toBe(409);
    expect((await send('GET', `/v1/turns/${turnId}/steers/${steers[1].steerId}`)).status).toBe(200);

    // Refusals, each with its documented status and error body.
    expect((await send('POST', `/v1/conversations/${conversationId}/steers`, { body: { text: 'too late' } })).status).toBe(409);
    expect((await send('POST', `/v1/conversations/${conversationId}/turns`, { body: { prompt: '' } })).status).toBe(400);
    expect((await send('GET', `/v1/turns/${turnId}`, { headers: { Authorization: OTHER_TENANT } })).status).toBe(404);
    expect((await send('GET', `/v1/turns/${randomUUID()}`, { headers: { Authorization: 'Bearer unknown-key' } })).status).toBe(401);
    expect((await send('GET', `/v1/conversations/${randomUUID()}/events`)).status).toBe(404);
    expect((await send('GET', `/v1/conversations/${conversationId}/events`, { headers: { 'Last-Event-ID': 'soon' } })).status).toBe(400);
    expect((await send('POST', `/v1/turns/${turnId}/cancel`, { body: {} })).status).toBe(409);

    // Agents: versions, a turn that runs one, and their refusals.
    const agent = { name: 'reviewer', instructions: 'Review carefully.', model: { provider: 'scripted', script: [{ text: 'reviewed' }] }, settings: { temperature: 0.2 }, tools: ['echo'] };
    expect((await send('POST', '/v1/agents', { body: agent })).status).toBe(201);
    expect((await send('POST', '/v1/agents', { body: agent })).status).toBe(409);
    expect((await send('POST', '/v1/agents', { body: { ...agent, name: 'hot', settings: { temperature: 3 } } })).status).toBe(400);
    const { name: _, ...definition } = agent;
    expect((await send('PUT', '/v1/agents/reviewer', { body: { ...definition, instructions: 'Be brief.' } })).status).toBe(200);
    expect((await send('PUT', '/v1/agents/nobody', { body: definition })).status).toBe(404);
    expect((await send('GET', '/v1/agents')).status).toBe(200);
    expect((await send('GET', '/v1/agents/reviewer')).status).toBe(200);
    expect((await send('GET', '/v1/agents/reviewer/versions/1')).status).toBe(200);
    expect((await send('GET', '/v1/agents/reviewer/versions/9')).status).toBe(404);
    expect((await send('GET', '/v1/agents/reviewer', { headers: { Authorization: OTHER_TENANT } })).status).toBe(404);
    const cid = JSON.parse((await send('POST', '/v1/conversations', { body: {} })).text).id as string;
    const run = await send('POST', `/v1/conversations/${cid}/turns`, { body: { prompt: 'Review the parser change', agent: 'reviewer@1', settings: { seed: 7 } } });
    expect(run.status).toBe(202);
    await stack.turnEnded(JSON.parse(run.text).turnId);
    expect((await send('POST', `/v1/conversations/${cid}/turns`, { body: { prompt: 'x', agent: 'ghost' } })).status).toBe(404);

    // An external turn: its runner's reports, answers and refusals.
    await runExternalTurnSession(send, OTHER_TENANT);

    // Discovery, answered by the engine.
    expect((await send('GET', '/v1/tools')).status).toBe(200);
    expect((await send('GET', '/v1/models')).status).toBe(200);

    // Operations and docs.
    for (const path of ['/healthz', '/readyz', '/metrics', '/docs', '/docs?plain', '/docs/openapi.json', '/docs/assets/swagger-ui.css']) {
      const r = await send('GET', path);
      expect({ path, status: r.status, violations: r.violations }).toEqual({ path, status: 200, violations: [] });
    }

    // An event stream ends when its gateway shuts down: a gateway of its own, so Prism (which reads whole bodies) sees its 200 end.
    const streaming = await startGateway(loadGatewayConfig({ ...stack.env, PORT: '0' }), { logger: createLogger({ level: 'error' }) });
    const streamProxy = await PrismProxy.start(doc, streaming.url);
    try {
      const stream = streamProxy.send('GET', `/v1/conversations/${conversationId}/events?live=0`, { headers: { Authorization: KEY } });
      await eventually(async () => total([await scrape(`${streaming.url}/metrics`)], 'steerline_event_streams_open') === 1, 20_000, 'the event stream to open');
      await streaming.close();
      const answer = await stream;
      answers.push(answer);
      expect({ status: answer.status, type: answer.headers.get('content-type'), replayed: answer.text.includes('event: TurnStarted') }).toEqual({ status: 200, type: expect.stringMatching(/^text\/event-stream/), replayed: true });
    } finally {
      await streamProxy.close();
      await streaming.close();
    }

    const violations = answers.flatMap((a) => a.violations.map((v) => `${a.method} ${a.path} → ${a.status}: ${v}`));
    expect(violations).toEqual([]);
  });

  it('reached every operation of the document', () => {
    const reached = new Set(answers.map((a) => operationOf(doc, a.method, a.path)));
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.filter((op) => !reached.has(op))).toEqual([]);
    expect(reached.has(undefined)).toBe(false);
  });
});

import { createLogger } from '@steerline/runtime';
import { startGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { eventually, NATS_URL } from '../support/env';
import { approve, startStack, type Stack } from '../support/stack';

/** The value of one sample in a Prometheus text exposition, 0 when absent. */
function sample(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('metrics, OpenAPI docs and request logs', () => {
  let stack: Stack;
  const metrics = async () => (await fetch(`${stack.url}/metrics`)).text();

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it('counts its HTTP requests by route and status and the requests waiting on Prefer: wait, and no steer or turn counters: the engine exports those', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id;
    // Step 1's call waits for approval: both steers stay queued until the test approves it, however slow the machine.
    const script = [{ tool: { name: 'sleep', args: { ms: 10 } } }, { tool: { name: 'echo', args: { text: 'step 2' } } }, { text: 'ok' }];
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'] } })).body.turnId;

    const delivered = stack.api('POST', `/turns/${tid}/steers`, { text: 'keep me' }, { prefer: 'wait=30' });
    await eventually(async () => (sample(await metrics(), 'steerline_waiting_requests') === 1 ? true : undefined), 20_000, 'a waiting request');
    const withdrawn = await stack.api('POST', `/turns/${tid}/steers`, { text: 'take me back' });
    expect((await stack.api('DELETE', `/turns/${tid}/steers/${withdrawn.body.steerId}`)).status).toBe(200);
    await approve(stack, tid);
    expect((await delivered).status).toBe(200);

    const text = await eventually(async () => {
      const t = await metrics();
      return sample(t, 'steerline_http_request_duration_seconds_count', 'method="POST",route="/v1/turns/:tid/steers",status="200"') === 1 ? t : undefined;
    }, 20_000, 'the waited steer request to be counted');
    expect(sample(text, 'steerline_waiting_requests')).toBe(0);
    expect(sample(text, 'steerline_http_request_duration_seconds_count', 'method="POST",route="/v1/turns/:tid/steers",status="202"')).toBe(1);
    expect(sample(text, 'steerline_http_request_duration_seconds_count', 'method="DELETE",route="/v1/turns/:tid/steers/:sid",status="200"')).toBe(1);
    expect(sample(text, 'steerline_event_streams_open')).toBe(0);
    // The gateway no longer reads the whole log for counters: summed over gateways they would count each fact N times.
    expect(text).not.toMatch(/^steerline_(steers|steer_delivery|turns|boundaries|model|tool)_/m);
  });

  it('serves an OpenAPI 3.1 document built from the routes themselves, and a page listing them', async () => {
    const doc = (await (await fetch(`${stack.url}/docs/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, Record<string, { summary: string; responses: Record<string, unknown>; requestBody?: { content: Record<string, { schema: any }> } }>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ id: `${method.toUpperCase()} ${path}`, op })));
    expect(operations.map((o) => o.id).sort()).toEqual(
      [
        'DELETE /v1/turns/{tid}/steers/{sid}',
        'PATCH /v1/turns/{tid}/steers/{sid}',
        'POST /v1/turns/{tid}/approvals/{toolCallId}',
        'GET /docs',
        'GET /docs/assets/{file}',
        'GET /docs/openapi.json',
        'GET /healthz',
        'GET /metrics',
        'GET /readyz',
        'GET /v1/agents',
        'GET /v1/agents/{name}',
        'GET /v1/agents/{name}/versions/{version}',
        'GET /v1/models',
        'GET /v1/tools',
        'POST /v1/agents',
        'PUT /v1/agents/{name}',
        'POST /v1/turns/{tid}/runner/answer',
        'POST /v1/turns/{tid}/runner/approvals/{toolCallId}',
        'POST /v1/turns/{tid}/runner/fail',
        'POST /v1/turns/{tid}/runner/interrupted',
        'POST /v1/turns/{tid}/runner/lease',
        'POST /v1/turns/{tid}/runner/live',
        'POST /v1/turns/{tid}/runner/results',
        'GET /v1/conversations',
        'GET /v1/conversations/{cid}',
        'GET /v1/conversations/{cid}/events',
        'GET /v1/turns/{tid}',
        'GET /v1/turns/{tid}/steers/{sid}',
        'POST /v1/conversations',
        'POST /v1/conversations/{cid}/steers',
        'POST /v1/conversations/{cid}/turns',
        'POST /v1/turns/{tid}/cancel',
        'POST /v1/turns/{tid}/steers',
      ].sort(),
    );
    // Every route carries its own description (an undocumented one would show its method as summary).
    for (const { id, op } of operations) expect([id, op.summary.startsWith(id.split(' ')[0])]).toEqual([id, false]);
    const steer = doc.paths['/v1/turns/{tid}/steers'].post;
    expect(Object.keys(steer.responses)).toEqual(expect.arrayContaining(['200', '202', '400', '401', '404', '409', '429', '503']));
    expect(steer.requestBody!.content['application/json'].schema).toMatchObject({ properties: { text: { type: 'string', maxLength: 4000 }, steerId: { format: 'uuid' } } });
    const turn = doc.paths['/v1/conversations/{cid}/turns'].post;
    expect(turn.requestBody!.content['application/json'].schema).toMatchObject({ required: ['prompt'], properties: { prompt: { maxLength: 100_000 } } });

    const page = await fetch(`${stack.url}/docs`);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('/v1/conversations/:cid/events');
  });

  it('writes one JSON log line per request with its request id and the tenant, conversation, turn and steer ids', async () => {
    const records: Array<Record<string, unknown>> = [];
    // The gateway's pino logger, writing into this list instead of standard output.
    const capture = createLogger({
      destination: {
        write: (line: string) => {
          const record = JSON.parse(line) as Record<string, unknown>;
          if (record.message === 'request') records.push(record);
        },
      },
    });
    const gateway = await startGateway(loadGatewayConfig({ NATS_URL, STEERLINE_PREFIX: stack.prefix, PORT: '0' }), { logger: capture });
    try {
      const post = (path: string, body: unknown, requestId: string) =>
        fetch(`${gateway.url}/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': requestId }, body: JSON.stringify(body) });
      const cid = ((await (await post('/conversations', {}, 'req-conversation')).json()) as { id: string }).id;
      // Still running when the steer comes a round trip later, however slow the machine; nothing waits for its end.
      const script = [{ tool: { name: 'sleep', args: { ms: 10_000 } } }, { text: 'ok' }];
      const started = await post(`/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script } }, 'req-turn');
      expect(started.headers.get('x-request-id')).toBe('req-turn');
      const { turnId } = (await started.json()) as { turnId: string };
      const { steerId } = (await (await post(`/turns/${turnId}/steers`, { text: 'left' }, 'req-steer')).json()) as { steerId: string };

      await eventually(() => (records.length >= 3 ? true : undefined), 20_000, 'three log records');
      expect(records.find((r) => r.requestId === 'req-conversation')).toMatchObject({ method: 'POST', route: '/v1/conversations', status: 201, tenantId: 'default', conversationId: cid });
      expect(records.find((r) => r.requestId === 'req-turn')).toMatchObject({ route: '/v1/conversations/:cid/turns', status: 202, conversationId: cid, turnId });
      expect(records.find((r) => r.requestId === 'req-steer')).toMatchObject({ route: '/v1/turns/:tid/steers', status: 202, turnId, steerId, durationMs: expect.any(Number) });
    } finally {
      await gateway.close();
    }
  });
});

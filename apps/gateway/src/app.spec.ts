import { BODY_MAX_BYTES, uuidv7 } from '@steerline/contracts';
import { ensureStream, jetstreamManager } from '@steerline/runtime';
import { answer, json, startHarness, type Harness } from './testing/harness';

const KEY = 'acme-secret-key';

describe('gateway over real NATS', () => {
  let h: Harness;
  // Every call carries a valid key unless a test says otherwise.
  const call = (path: string, init: RequestInit & { key?: string } = {}) => h.call(path, { key: KEY, ...init });
  const postJson = (path: string, body: unknown) => h.postJson(path, body, { key: KEY });

  beforeAll(async () => {
    h = await startHarness({ STEERLINE_API_KEYS: `${KEY}:acme,globex-key:globex` });
  });
  afterAll(() => h?.close());

  it('reports the real bound URL when asked to listen on port 0', () => {
    expect(h.gateway.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(h.gateway.url).not.toMatch(/:0$/);
  });

  it('answers /healthz without an API key', async () => {
    const res = await h.call('/healthz');
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ status: 'ok' });
  });

  it('refuses a request with an unknown API key as unauthorized', async () => {
    const res = await call(`/v1/turns/${uuidv7()}`, { key: 'not-a-key' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await json(res)).error.code).toBe('unauthorized');
  });

  it('refuses a request without an Authorization header as unauthorized', async () => {
    const res = await h.call(`/v1/turns/${uuidv7()}`);
    expect(res.status).toBe(401);
  });

  it('refuses a turn id that is not a UUID with invalid_request', async () => {
    const res = await postJson('/v1/turns/not-a-uuid/steers', { text: 'hi' });
    expect(res.status).toBe(400);
    expect((await json(res)).error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('tid') });
  });

  it('refuses a body that is not valid JSON with invalid_request, not a 500', async () => {
    const res = await call(`/v1/turns/${uuidv7()}/steers`, { method: 'POST', body: '{"text": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect((await json(res)).error.code).toBe('invalid_request');
  });

  it('refuses a body that is not JSON at all with invalid_request', async () => {
    const res = await call(`/v1/turns/${uuidv7()}/steers`, { method: 'POST', body: 'text=hi', headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(400);
    expect((await json(res)).error.code).toBe('invalid_request');
  });

  it('reads a body of a +json media type as JSON (the steer is validated, not refused as not JSON)', async () => {
    const res = await call(`/v1/turns/${uuidv7()}/steers`, { method: 'POST', body: '{"text":"   "}', headers: { 'content-type': 'application/merge-patch+json' } });
    expect(res.status).toBe(400);
    expect((await json(res)).error.message).toMatch(/text/);
  });

  it('reads an empty body sent as application/json as no body', async () => {
    const res = await call(`/v1/turns/${uuidv7()}/steers`, { method: 'POST', body: '', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect((await json(res)).error).toMatchObject({ code: 'invalid_request', message: 'a JSON request body is required' });
  });

  it(`refuses a body larger than ${BODY_MAX_BYTES} bytes with payload_too_large`, async () => {
    const res = await postJson(`/v1/turns/${uuidv7()}/steers`, { text: 'x'.repeat(BODY_MAX_BYTES + 1) });
    expect(res.status).toBe(413);
    expect((await json(res)).error.code).toBe('payload_too_large');
  });

  it('refuses a body with fields the route does not know', async () => {
    const res = await postJson(`/v1/turns/${uuidv7()}/steers`, { text: 'hi', steer_id: uuidv7() });
    expect(res.status).toBe(400);
  });

  it('refuses a steer whose text is empty after trimming, before asking any engine', async () => {
    const res = await postJson(`/v1/turns/${uuidv7()}/steers`, { text: '   ' });
    expect(res.status).toBe(400);
    expect((await json(res)).error.code).toBe('invalid_request');
  });

  it('answers turn_not_running for a steer to a turn no engine runs', async () => {
    const res = await postJson(`/v1/turns/${uuidv7()}/steers`, { text: 'go left' });
    expect(res.status).toBe(409);
    expect((await json(res)).error.code).toBe('turn_not_running');
  });

  it('answers 503 unavailable when nothing answers a read query', async () => {
    const res = await call(`/v1/turns/${uuidv7()}`);
    expect(res.status).toBe(503);
    expect((await json(res)).error.code).toBe('unavailable');
  });

  it('answers 503 unavailable when no engine takes a new conversation', async () => {
    const res = await call('/v1/conversations', { method: 'POST' });
    expect(res.status).toBe(503);
  });

  it('answers unknown routes with a not_found error body', async () => {
    const res = await call('/v1/nothing-here');
    expect(res.status).toBe(404);
    expect((await json(res)).error.code).toBe('not_found');
  });

  it('is not ready, and says which parts failed, without the stream and the database', async () => {
    const res = await h.call('/readyz');
    expect(res.status).toBe(503);
    const { error } = await json(res);
    expect(error.code).toBe('unavailable');
    expect(error.checks.nats).toBe('ok');
    expect(error.checks.stream).toContain('not found');
    expect(error.checks.database).not.toBe('ok');
  });

  it('is ready once the stream exists and persistence reports the database up', async () => {
    await ensureStream(await jetstreamManager(h.nc), h.s);
    const sub = await answer(h.nc, h.s.queryHealth, () => ({ database: true }));
    try {
      const res = await h.call('/readyz');
      expect(res.status).toBe(200);
      expect(await json(res)).toEqual({ status: 'ready', checks: { nats: 'ok', stream: 'ok', database: 'ok' } });
    } finally {
      sub.unsubscribe();
    }
  });
});

describe('gateway without API keys', () => {
  it('runs every request as tenant "default"', async () => {
    const h = await startHarness();
    const sub = await answer(h.nc, h.s.createConversation, (body) => ({ id: (body as { tenantId: string }).tenantId }));
    try {
      const res = await h.call('/v1/conversations', { method: 'POST' });
      expect(res.status).toBe(201);
      expect(await json(res)).toEqual({ id: 'default' });
    } finally {
      sub.unsubscribe();
      await h.close();
    }
  });
});

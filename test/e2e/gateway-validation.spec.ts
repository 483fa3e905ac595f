import { BODY_MAX_BYTES, PROMPT_MAX, STEER_TEXT_MAX, uuidv7 } from '@steerline/contracts';
import { startStack, type Stack } from '../support/stack';

const KEY = 'k1';

interface Case {
  what: string;
  method: string;
  /** Built once the conversation and turn exist. */
  path: (ids: { cid: string; tid: string }) => string;
  /** A raw body string is sent as is; anything else as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  status: number;
  code: string;
}

const json = { 'content-type': 'application/json' };
const steer = ({ tid }: { tid: string }) => `/v1/turns/${tid}/steers`;
const convSteer = ({ cid }: { cid: string }) => `/v1/conversations/${cid}/steers`;
const turns = ({ cid }: { cid: string }) => `/v1/conversations/${cid}/turns`;
const bad = (what: string, method: string, path: Case['path'], body: unknown, status = 400, code = 'invalid_request', headers: Record<string, string> = json): Case => ({
  what,
  method,
  path,
  body,
  headers,
  status,
  code,
});

const cases: Case[] = [
  // Bodies that are not JSON, or not the JSON a route takes
  bad('a body that is not valid JSON', 'POST', steer, '{"text": '),
  bad('a JSON string instead of an object', 'POST', steer, '"go left"'),
  bad('a JSON array instead of an object', 'POST', steer, '[{"text":"go left"}]'),
  bad('the JSON literal null', 'POST', steer, 'null'),
  bad('a body sent as text/plain', 'POST', steer, 'text=go left', 400, 'invalid_request', { 'content-type': 'text/plain' }),
  bad('a body sent as a form', 'POST', steer, 'text=go+left', 400, 'invalid_request', { 'content-type': 'application/x-www-form-urlencoded' }),
  bad('JSON in a charset the server does not read', 'POST', steer, '{"text":"go"}', 400, 'invalid_request', { 'content-type': 'application/json; charset=latin-9' }),
  bad('a steer without a body at all', 'POST', steer, undefined, 400, 'invalid_request', {}),
  bad(`a body over ${BODY_MAX_BYTES} bytes`, 'POST', steer, { text: 'x'.repeat(BODY_MAX_BYTES + 10) }, 413, 'payload_too_large'),
  // Steer text
  bad('a steer without text', 'POST', steer, {}),
  bad('a steer whose text is a number', 'POST', steer, { text: 42 }),
  bad('a steer whose text is null', 'POST', steer, { text: null }),
  bad('a steer whose text is an array', 'POST', steer, { text: ['go'] }),
  bad('an empty steer text', 'POST', steer, { text: '' }),
  bad('a whitespace-only steer text', 'POST', steer, { text: ' \n\t ' }),
  bad(`a steer text over ${STEER_TEXT_MAX} characters`, 'POST', steer, { text: 'x'.repeat(STEER_TEXT_MAX + 1) }),
  bad('a steer text with a control character', 'POST', steer, { text: 'ring \u0007 the bell' }),
  bad('a steer text with an escape sequence', 'POST', steer, { text: 'clear \u001b[2J' }),
  bad('a steerId that is not a UUID', 'POST', steer, { text: 'go', steerId: 'steer-1' }),
  bad('a steerId that is a number', 'POST', steer, { text: 'go', steerId: 7 }),
  bad('an unknown field (a typo of steerId)', 'POST', steer, { text: 'go', steer_id: uuidv7() }),
  bad('a conversation steer with a non-UUID expectedTurnId', 'POST', convSteer, { text: 'go', expectedTurnId: 'current' }),
  // Starting a turn
  bad('a turn without a prompt', 'POST', turns, { model: { provider: 'scripted' } }),
  bad('an empty prompt', 'POST', turns, { prompt: '' }),
  bad('a prompt that is not a string', 'POST', turns, { prompt: { text: 'hi' } }),
  bad(`a prompt over ${PROMPT_MAX} characters`, 'POST', turns, { prompt: 'x'.repeat(PROMPT_MAX + 1) }),
  bad('an unknown model provider', 'POST', turns, { prompt: 'hi', model: { provider: 'gpt-9000' } }),
  bad('a model without a provider', 'POST', turns, { prompt: 'hi', model: { name: 'x' } }),
  bad('a script that is not a list', 'POST', turns, { prompt: 'hi', model: { provider: 'scripted', script: 'go' } }),
  bad('a script step that is neither tool, tools, text nor error', 'POST', turns, { prompt: 'hi', model: { provider: 'scripted', script: [{ think: 'hard' }] } }),
  bad('a script step whose tool has no name', 'POST', turns, { prompt: 'hi', model: { provider: 'scripted', script: [{ tool: { args: {} } }] } }),
  bad('a negative delayMs', 'POST', turns, { prompt: 'hi', model: { provider: 'scripted', script: [{ text: 'ok', delayMs: -5 }] } }),
  bad('a negative maxQueued', 'POST', turns, { prompt: 'hi', limits: { maxQueued: -1 } }),
  bad('a maxSteps of zero', 'POST', turns, { prompt: 'hi', limits: { maxSteps: 0 } }),
  bad('a fractional maxContinuations', 'POST', turns, { prompt: 'hi', limits: { maxContinuations: 1.5 } }),
  bad('a limit given as a string', 'POST', turns, { prompt: 'hi', limits: { maxQueued: '5' } }),
  bad('an unknown limit', 'POST', turns, { prompt: 'hi', limits: { maxTokens: 5 } }),
  bad('a body on conversation creation', 'POST', () => '/v1/conversations', { tenantId: 'globex' }),
  // Cancel
  bad('a cancel reason that is a number', 'POST', ({ tid }) => `/v1/turns/${tid}/cancel`, { reason: 3 }),
  bad('a cancel reason over 500 characters', 'POST', ({ tid }) => `/v1/turns/${tid}/cancel`, { reason: 'x'.repeat(501) }),
  // Path ids
  bad('a turn id that is not a UUID', 'GET', () => '/v1/turns/42', undefined, 400, 'invalid_request', {}),
  bad('a conversation id with a NATS wildcard', 'GET', () => '/v1/conversations/%3E', undefined, 400, 'invalid_request', {}),
  bad('a conversation id with a subject separator', 'POST', () => '/v1/conversations/a.b/turns', { prompt: 'hi' }),
  bad('a steer id that is not a UUID', 'GET', ({ tid }) => `/v1/turns/${tid}/steers/latest`, undefined, 400, 'invalid_request', {}),
  bad('a withdraw of a non-UUID steer id', 'DELETE', ({ tid }) => `/v1/turns/${tid}/steers/1`, undefined, 400, 'invalid_request', {}),
  // Queries and headers
  bad('a negative transcript limit', 'GET', ({ cid }) => `/v1/conversations/${cid}?limit=-1`, undefined, 400, 'invalid_request', {}),
  bad('a transcript offset that is not a number', 'GET', ({ cid }) => `/v1/conversations/${cid}?afterMessage=ten`, undefined, 400, 'invalid_request', {}),
  bad('a Last-Event-ID that is not a sequence', 'GET', ({ cid }) => `/v1/conversations/${cid}/events`, undefined, 400, 'invalid_request', { 'last-event-id': 'yesterday' }),
  bad('a negative ?after=', 'GET', ({ cid }) => `/v1/conversations/${cid}/events?after=-5`, undefined, 400, 'invalid_request', {}),
  // Auth and routing
  bad('no Authorization header', 'GET', ({ tid }) => `/v1/turns/${tid}`, undefined, 401, 'unauthorized', { authorization: '' }),
  bad('an unknown API key', 'GET', ({ tid }) => `/v1/turns/${tid}`, undefined, 401, 'unauthorized', { authorization: 'Bearer guess' }),
  bad('a Basic instead of a Bearer credential', 'GET', ({ tid }) => `/v1/turns/${tid}`, undefined, 401, 'unauthorized', { authorization: 'Basic azE6' }),
  bad('a route that does not exist', 'GET', () => '/v1/steers', undefined, 404, 'not_found', {}),
  bad('a method a route does not take', 'PUT', ({ tid }) => `/v1/turns/${tid}`, { status: 'cancelled' }, 404, 'not_found'),
];

describe('every malformed request gets a typed 4xx, never a 5xx', () => {
  let stack: Stack;
  let ids = { cid: '', tid: '' };

  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_API_KEYS: `${KEY}:acme` } });
    const auth = { authorization: `Bearer ${KEY}` };
    const cid = (await stack.api('POST', '/conversations', undefined, auth)).body.id;
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'hi', model: { provider: 'scripted', script: [{ text: 'ok' }] } }, auth)).body.turnId;
    ids = { cid, tid };
  });
  afterAll(() => stack?.close());

  it(`covers at least 30 kinds of malformed request (${cases.length})`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases.map((c) => [c.what, c]))('%s → the expected status and code', async (_what, c) => {
    const headers: Record<string, string> = { authorization: `Bearer ${KEY}`, ...c.headers };
    if (headers.authorization === '') delete headers.authorization;
    const body = c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
    const res = await fetch(`${stack.url}${c.path(ids)}`, { method: c.method, headers, body });
    const answer = (await res.json()) as { error?: { code?: string; message?: string } };
    expect(res.status).toBeLessThan(500);
    expect({ status: res.status, code: answer.error?.code }).toEqual({ status: c.status, code: c.code });
    expect(typeof answer.error?.message).toBe('string');
  });
});

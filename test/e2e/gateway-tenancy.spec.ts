import { uuidv7 } from '@steerline/contracts';
import { eventually } from '../support/env';
import { approve, startStack, type Stack } from '../support/stack';

const ACME = { authorization: 'Bearer k1' };
const GLOBEX = { authorization: 'Bearer k2' };

describe('tenants are isolated: another tenant’s conversation, turn and steer do not exist for you', () => {
  let stack: Stack;
  let cid = '';
  let tid = '';
  let sid = '';

  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_API_KEYS: 'k1:acme,k2:globex' } });
    cid = (await stack.api('POST', '/conversations', undefined, ACME)).body.id;
    // Step 1's call waits for acme's approval, given by the last test: every globex call below
    // meets a running turn with a queued steer, however slow the machine.
    const script = [{ tool: { name: 'sleep', args: { ms: 10 } } }, { text: 'done' }];
    tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'acme work', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'] } }, ACME)).body.turnId;
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'acme only' }, ACME);
    expect(steer.status).toBe(202);
    sid = steer.body.steerId;
    await stack.settled();
  });
  afterAll(() => stack?.close());

  it('the owning tenant sees its conversation, turn, steer and events', async () => {
    expect((await stack.api('GET', `/conversations/${cid}`, undefined, ACME)).status).toBe(200);
    expect((await stack.api('GET', `/turns/${tid}`, undefined, ACME)).body).toMatchObject({ id: tid, status: 'running' });
    expect((await stack.api('GET', `/turns/${tid}/steers/${sid}`, undefined, ACME)).body).toMatchObject({ steerId: sid, status: 'queued' });
    const events = await fetch(`${stack.url}/v1/conversations/${cid}/events`, { headers: ACME });
    expect(events.status).toBe(200);
    await events.body?.cancel();
  });

  // Every route that names the first tenant's resources, called with the second tenant's key.
  // Paths and bodies are functions: the ids exist only once beforeAll has run.
  type Route = [what: string, method: string, path: () => string, body?: () => unknown, headers?: Record<string, string>];
  const routes: Route[] = [
    ['reads the conversation', 'GET', () => `/conversations/${cid}`],
    ['streams the conversation’s events', 'GET', () => `/conversations/${cid}/events`],
    ['starts a turn in the conversation', 'POST', () => `/conversations/${cid}/turns`, () => ({ prompt: 'hijack' })],
    ['steers the conversation', 'POST', () => `/conversations/${cid}/steers`, () => ({ text: 'hijack' })],
    ['steers the conversation naming the turn', 'POST', () => `/conversations/${cid}/steers`, () => ({ text: 'hijack', expectedTurnId: tid })],
    ['reads the turn', 'GET', () => `/turns/${tid}`],
    ['steers the turn', 'POST', () => `/turns/${tid}/steers`, () => ({ text: 'hijack' })],
    ['steers the turn reusing the steer’s id', 'POST', () => `/turns/${tid}/steers`, () => ({ text: 'hijack', steerId: sid })],
    ['cancels the turn', 'POST', () => `/turns/${tid}/cancel`],
    ['reads the steer', 'GET', () => `/turns/${tid}/steers/${sid}`],
    ['reads the steer waiting for it', 'GET', () => `/turns/${tid}/steers/${sid}`, undefined, { prefer: 'wait=1' }],
    ['withdraws the steer', 'DELETE', () => `/turns/${tid}/steers/${sid}`],
  ];

  // Rest parameters: a test function declaring more parameters than a row has would be taken for a done-callback test.
  it.each(routes)('another tenant that %s gets 404 not_found', async (...[, method, path, body, headers]: Route) => {
    const res = await stack.api(method, path(), body?.(), { ...GLOBEX, ...headers });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it.each(routes)('a caller without a valid key that %s gets 401', async (...[, method, path, body]: Route) => {
    const res = await stack.api(method, path(), body?.(), { authorization: 'Bearer nope' });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
  });

  it('none of that touched the first tenant’s turn: its steer is delivered and the turn completes', async () => {
    await approve(stack, tid, 'call_1_0', ACME);
    const receipt = await stack.api('GET', `/turns/${tid}/steers/${sid}`, undefined, { ...ACME, prefer: 'wait=30' });
    expect(receipt.body).toMatchObject({ steerId: sid, status: 'delivered', text: 'acme only' });
    await eventually(async () => ((await stack.api('GET', `/turns/${tid}`, undefined, ACME)).body?.status === 'completed' ? true : undefined), 20_000, 'completion');
    await stack.settled();
    const conversation = await stack.api('GET', `/conversations/${cid}`, undefined, ACME);
    expect(conversation.body.turns).toHaveLength(1);
    expect(conversation.body.steers.map((s: { id: string }) => s.id)).toEqual([sid]);
    // The log holds no event under the second tenant's subjects.
    expect((await stack.nats.readAll()).filter((e) => e.event.tenantId !== 'acme')).toEqual([]);
  });

  it('a conversation id unknown to everyone is 404 for both tenants alike, so existence is not revealed', async () => {
    const unknown = uuidv7();
    for (const key of [ACME, GLOBEX]) {
      const res = await stack.api('GET', `/conversations/${unknown}`, undefined, key);
      expect([res.status, res.body.error.code]).toEqual([404, 'not_found']);
    }
  });
});

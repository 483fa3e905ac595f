import { EXTERNAL_MODEL, type StartTurnAnswer } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startStack, type Stack } from '../support/stack';

const ACME = { authorization: 'Bearer k1' };
const GLOBEX = { authorization: 'Bearer k2' };
const scripted = (text: string) => ({ provider: 'scripted', script: [{ text }] });

/** Starts a stack whose STEERLINE_DEFAULT_MODEL is `value`, with acme's agent `helper` at versions 1 and 2; globex has none. */
async function stackWithDefault(value: string): Promise<Stack> {
  const stack = await startStack({ env: { STEERLINE_API_KEYS: 'k1:acme,k2:globex', STEERLINE_DEFAULT_MODEL: value } });
  const created = await stack.api('POST', '/agents', { name: 'helper', instructions: 'v1 instructions', model: scripted('v1 answer'), tools: ['echo'] }, ACME);
  expect(created.status).toBe(201);
  const next = await stack.api('PUT', '/agents/helper', { instructions: 'v2 instructions', model: scripted('v2 answer'), settings: { temperature: 0.3 }, tools: ['echo', 'sleep'] }, ACME);
  expect(next.status).toBe(200);
  return stack;
}

const startedOf = async (stack: Stack, turnId: string) => (await stack.turnEnded(turnId)).find((e) => e.event.type === 'TurnStarted')!.event;
const conversation = async (stack: Stack, who = ACME) => (await stack.api('POST', '/conversations', {}, who)).body.id as string;

/** STEERLINE_DEFAULT_MODEL as an agent (docs/design.md §6.1): a turn that names neither model nor agent runs it, resolved in its tenant. */
describe('STEERLINE_DEFAULT_MODEL naming an agent (its latest version)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await stackWithDefault('helper');
  });
  afterAll(() => stack?.close());

  const V2 = { agent: { name: 'helper', version: 2 }, instructions: 'v2 instructions', settings: { temperature: 0.3 }, tools: ['echo', 'sleep'], model: { provider: 'scripted', script: [{ text: 'v2 answer' }] } };

  it('an HTTP start with neither model nor agent runs the agent’s latest version, recorded on TurnStarted', async () => {
    const cid = await conversation(stack);
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'no model, no agent' }, ACME);
    expect(res.status).toBe(202);
    const started = await startedOf(stack, res.body.turnId);
    expect(started.data).toMatchObject({ prompt: 'no model, no agent', ...V2 });
    expect((await stack.turnEnded(res.body.turnId)).at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'v2 answer' } });
  });

  it('a start sent straight over NATS with neither runs it too', async () => {
    const cid = await conversation(stack);
    const answer = await request<StartTurnAnswer>(stack.nats.nc, stack.nats.s.startTurn, { tenantId: 'acme', conversationId: cid, prompt: 'over nats' }, { timeoutMs: 10_000, noResponders: 'unavailable' });
    expect((await startedOf(stack, answer.turnId)).data).toMatchObject({ prompt: 'over nats', ...V2 });
  });

  it('a turn’s own model wins: no agent is recorded; a turn’s own agent wins over the default', async () => {
    const cid = await conversation(stack);
    const own = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'mine', model: scripted('my own') }, ACME);
    expect(own.status).toBe(202);
    const started = await startedOf(stack, own.body.turnId);
    expect(started.data).toMatchObject({ model: { provider: 'scripted', script: [{ text: 'my own' }] } });
    expect(started.data).not.toHaveProperty('agent');
    expect(started.data).not.toHaveProperty('instructions');

    const pinned = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'v1 please', agent: 'helper@1' }, ACME);
    expect(pinned.status).toBe(202);
    expect((await startedOf(stack, pinned.body.turnId)).data).toMatchObject({ agent: { name: 'helper', version: 1 }, instructions: 'v1 instructions' });
  });

  it('a tenant without the agent is answered 400 invalid_request naming STEERLINE_DEFAULT_MODEL, over HTTP and NATS, and nothing is appended', async () => {
    const cid = await conversation(stack, GLOBEX);
    const before = (await stack.nats.readAll()).length;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'no model' }, GLOBEX);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('STEERLINE_DEFAULT_MODEL names agent helper') });
    await expect(request(stack.nats.nc, stack.nats.s.startTurn, { tenantId: 'globex', conversationId: cid, prompt: 'no model' }, { timeoutMs: 10_000, noResponders: 'unavailable' })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('STEERLINE_DEFAULT_MODEL'),
    });
    expect((await stack.nats.readAll()).length).toBe(before);
    // The tenant's own model still runs.
    const own = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'mine', model: scripted('globex') }, GLOBEX);
    expect(own.status).toBe(202);
  });

  it('an external turn keeps its own rule: its runner’s model, no agent', async () => {
    const cid = await conversation(stack);
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'elsewhere', runner: 'external' }, ACME);
    expect(res.status).toBe(202);
    const events = await stack.turnHas(res.body.turnId, 'TurnStarted');
    const started = events.find((e) => e.event.type === 'TurnStarted')!.event;
    expect(started.data).toMatchObject({ runner: 'external', model: EXTERNAL_MODEL });
    expect(started.data).not.toHaveProperty('agent');
    expect((await stack.api('POST', `/turns/${res.body.turnId}/cancel`, {}, ACME)).status).toBe(202);
  });
});

describe('STEERLINE_DEFAULT_MODEL naming an agent version (name@version)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await stackWithDefault('helper@1');
  });
  afterAll(() => stack?.close());

  it('a turn with neither model nor agent runs the pinned version, though a later one exists', async () => {
    const cid = await conversation(stack);
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'pinned' }, ACME);
    expect(res.status).toBe(202);
    expect((await startedOf(stack, res.body.turnId)).data).toMatchObject({ agent: { name: 'helper', version: 1 }, instructions: 'v1 instructions', tools: ['echo'], model: { script: [{ text: 'v1 answer' }] } });
  });
});

import { SteerlineClient, SteerlineClientError } from '@steerline/client';
import type { StartTurnAnswer } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startStack, type Stack } from '../support/stack';

const ACME = { authorization: 'Bearer k1' };
const GLOBEX = { authorization: 'Bearer k2' };

const scripted = (text: string) => ({ provider: 'scripted', script: [{ text }] });
const reviewer = {
  name: 'reviewer',
  description: 'Reviews a change',
  instructions: 'You are a careful reviewer.',
  model: scripted('reviewed'),
  settings: { temperature: 0.2, maxOutputTokens: 512 },
  tools: ['echo'],
};

/** Versioned agents over the whole stack (docs/design.md §6.1): stored in NATS KV, read by the gateway and the engine. */
describe('versioned agents', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_API_KEYS: 'k1:acme,k2:globex' } });
  });
  afterAll(() => stack?.close());

  const api = (method: string, path: string, body?: unknown, who = ACME) => stack.api(method, path, body, who);

  it('POST makes version 1, PUT the next; every version reads back as it was made, the latest by name', async () => {
    const created = await api('POST', '/agents', reviewer);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ ...reviewer, model: { ...reviewer.model, name: 'scripted' }, version: 1, createdAt: expect.any(String) });
    expect(created.headers.get('content-type')).toMatch(/^application\/json/);

    const { name: _, ...definition } = reviewer;
    const v2 = await api('PUT', '/agents/reviewer', { ...definition, instructions: 'Be brief.' });
    expect(v2.status).toBe(200);
    expect(v2.body).toMatchObject({ name: 'reviewer', version: 2, instructions: 'Be brief.' });

    expect((await api('GET', '/agents/reviewer')).body).toMatchObject({ version: 2, instructions: 'Be brief.' });
    expect((await api('GET', '/agents/reviewer/versions/1')).body).toEqual(created.body);
    expect((await api('GET', '/agents/reviewer/versions/2')).body).toEqual(v2.body);
    const list = await api('GET', '/agents');
    expect(list.body.agents.map((a: { name: string; version: number }) => `${a.name}@${a.version}`)).toContain('reviewer@2');
  });

  it('a second POST of the name answers 409 already_exists and changes nothing', async () => {
    await api('POST', '/agents', { name: 'twice', model: scripted('one') });
    const again = await api('POST', '/agents', { name: 'twice', model: scripted('two') });
    expect({ status: again.status, code: again.body.error.code }).toEqual({ status: 409, code: 'already_exists' });
    expect((await api('GET', '/agents/twice')).body).toMatchObject({ version: 1, model: { script: [{ text: 'one' }] } });
  });

  it('concurrent PUTs each make their own version: none is lost or overwritten', async () => {
    await api('POST', '/agents', { name: 'busy', model: scripted('v1') });
    const puts = await Promise.all([...Array(6).keys()].map((i) => api('PUT', '/agents/busy', { model: scripted(`put ${i}`) })));
    expect(puts.map((p) => p.status)).toEqual(Array(6).fill(200));
    expect(puts.map((p) => p.body.version).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7]);
    for (const put of puts) expect((await api('GET', `/agents/busy/versions/${put.body.version}`)).body).toEqual(put.body);
  });

  it('an unknown agent or version answers 404 not_found', async () => {
    for (const path of ['/agents/nobody', '/agents/nobody/versions/1', '/agents/reviewer/versions/99']) {
      const res = await api('GET', path);
      expect({ path, status: res.status, code: res.body.error.code }).toEqual({ path, status: 404, code: 'not_found' });
    }
    const put = await api('PUT', '/agents/nobody', { model: scripted('x') });
    expect({ status: put.status, code: put.body.error.code }).toEqual({ status: 404, code: 'not_found' });
  });

  it.each([
    ['a temperature of 3', { ...reviewer, name: 'hot', settings: { temperature: 3 } }, 'settings.temperature'],
    ['no model', { name: 'nomodel' }, 'model'],
    ['a name with a space', { ...reviewer, name: 'my agent' }, 'name'],
    ['300 tool patterns', { ...reviewer, name: 'many', tools: [...Array(300).keys()].map((i) => `t${i}`) }, 'tools'],
    ['instructions over 100 000 characters', { ...reviewer, name: 'long', instructions: 'x'.repeat(100_001) }, 'instructions'],
    ['a tool choice its tools do not allow', { ...reviewer, name: 'choosy', tools: ['echo'], settings: { toolChoice: { name: 'sleep' } } }, 'settings.toolChoice.name'],
    ['an unknown field', { ...reviewer, name: 'odd', colour: 'blue' }, 'colour'],
  ])('a definition with %s answers 400 naming the field, and makes no agent', async (_what, body, field) => {
    const res = await api('POST', '/agents', body);
    expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: 'invalid_request' });
    expect(res.body.error.message).toContain(field);
    if (/^[A-Za-z0-9_-]+$/.test(body.name ?? '')) expect((await api('GET', `/agents/${body.name}`)).status).toBe(404);
  });

  it('another tenant never sees an agent: not listed, not read, not versioned, and may have its own of the same name', async () => {
    await api('POST', '/agents', { name: 'private', model: scripted('acme') });
    expect((await api('GET', '/agents', undefined, GLOBEX)).body.agents.map((a: { name: string }) => a.name)).not.toContain('private');
    for (const [method, path, body] of [['GET', '/agents/private'], ['GET', '/agents/private/versions/1'], ['PUT', '/agents/private', { model: scripted('globex') }]] as const) {
      const res = await api(method, path, body, GLOBEX);
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 });
    }
    expect((await api('POST', '/agents', { name: 'private', model: scripted('globex') }, GLOBEX)).body).toMatchObject({ version: 1, model: { script: [{ text: 'globex' }] } });
    expect((await api('GET', '/agents/private')).body.model.script).toEqual([{ text: 'acme' }]);
    // A turn of globex naming acme's agent: its own, not acme's.
    const cid = (await api('POST', '/conversations', {}, GLOBEX)).body.id;
    const turn = await api('POST', `/conversations/${cid}/turns`, { prompt: 'hi', agent: 'private' }, GLOBEX);
    const ended = await stack.turnEnded(turn.body.turnId);
    expect(ended.at(-1)!.event.data).toMatchObject({ text: 'globex' });
  });

  it('the typed client makes, versions and reads agents, and starts a turn with one', async () => {
    const client = new SteerlineClient({ baseUrl: stack.url, apiKey: 'k1' });
    expect(await client.createAgent('typed', { model: { provider: 'scripted', script: [{ text: 'typed v1' }] } })).toMatchObject({ name: 'typed', version: 1 });
    expect(await client.updateAgent('typed', { model: { provider: 'scripted', script: [{ text: 'typed v2' }] }, instructions: 'v2' })).toMatchObject({ version: 2 });
    expect(await client.getAgent('typed')).toMatchObject({ version: 2, instructions: 'v2' });
    expect(await client.getAgent('typed', 1)).toMatchObject({ version: 1 });
    expect((await client.listAgents()).agents.map((a) => a.name)).toContain('typed');
    await expect(client.createAgent('typed', { model: { provider: 'scripted' } })).rejects.toEqual(expect.objectContaining({ code: 'already_exists', status: 409 }));
    await expect(client.getAgent('typed', 3)).rejects.toBeInstanceOf(SteerlineClientError);
    const { id } = await client.createConversation();
    const { turnId } = await client.startTurn(id, { prompt: 'go', agent: 'typed@1', settings: { temperature: 1 } });
    const started = (await stack.turnEnded(turnId)).find((e) => e.event.type === 'TurnStarted')!.event;
    expect(started.data).toMatchObject({ agent: { name: 'typed', version: 1 }, settings: { temperature: 1 } });
  });

  describe('a turn that runs an agent', () => {
    let cid = '';
    beforeAll(async () => {
      await api('POST', '/agents', { name: 'runner', instructions: 'v1 instructions', model: scripted('v1 answer'), settings: { temperature: 0.5, seed: 1 }, tools: ['echo', 'sl*'] });
      await api('PUT', '/agents/runner', { instructions: 'v2 instructions', model: scripted('v2 answer'), settings: { temperature: 0.7 }, tools: ['echo'] });
      cid = (await api('POST', '/conversations', {})).body.id;
    });

    const started = async (turnId: string) => {
      const events = await stack.turnEnded(turnId);
      return { started: events.find((e) => e.event.type === 'TurnStarted')!.event, ended: events.at(-1)!.event };
    };

    it('by name runs the latest version, and TurnStarted records the agent, the version and the resolved fields', async () => {
      const turn = await api('POST', `/conversations/${cid}/turns`, { prompt: 'go', agent: 'runner' });
      expect(turn.status).toBe(202);
      const { started: e, ended } = await started(turn.body.turnId);
      expect(e.version).toBe(3);
      expect(e.data).toMatchObject({ agent: { name: 'runner', version: 2 }, instructions: 'v2 instructions', settings: { temperature: 0.7 }, tools: ['echo'], model: { provider: 'scripted', script: [{ text: 'v2 answer' }] } });
      expect(ended.data).toMatchObject({ text: 'v2 answer' });
    });

    it('as name@version runs that version; the fields the turn gives override the agent’s, settings key by key', async () => {
      const turn = await api('POST', `/conversations/${cid}/turns`, { prompt: 'go', agent: 'runner@1', instructions: 'the turn’s own', settings: { maxOutputTokens: 64 } });
      expect(turn.status).toBe(202);
      const { started: e } = await started(turn.body.turnId);
      expect(e.data).toMatchObject({
        agent: { name: 'runner', version: 1 },
        instructions: 'the turn’s own',
        settings: { temperature: 0.5, seed: 1, maxOutputTokens: 64 },
        tools: ['echo', 'sl*'],
        model: { script: [{ text: 'v1 answer' }] },
      });
    });

    it('sent straight over NATS, the engine resolves the agent from the same store', async () => {
      const answer = await request<StartTurnAnswer>(stack.nats.nc, stack.nats.s.startTurn, { tenantId: 'acme', conversationId: cid, prompt: 'over nats', agent: 'runner' }, { timeoutMs: 10_000, noResponders: 'unavailable' });
      const { started: e } = await started(answer.turnId);
      expect(e.data).toMatchObject({ agent: { name: 'runner', version: 2 }, instructions: 'v2 instructions', tools: ['echo'] });
      await expect(request(stack.nats.nc, stack.nats.s.startTurn, { tenantId: 'acme', conversationId: cid, prompt: 'x', agent: 'runner@9' }, { timeoutMs: 10_000, noResponders: 'unavailable' })).rejects.toMatchObject({ code: 'not_found' });
    });

    it.each([
      ['an unknown agent', { agent: 'ghost' }, 404, 'not_found'],
      ['an unknown version', { agent: 'runner@7' }, 404, 'not_found'],
      ['a tool choice the agent’s tools do not allow', { agent: 'runner', settings: { toolChoice: { name: 'sleep' } } }, 400, 'invalid_request'],
    ])('with %s is refused, and nothing is appended', async (_what, fields, status, code) => {
      const before = (await stack.nats.readAll()).length;
      const res = await api('POST', `/conversations/${cid}/turns`, { prompt: 'go', ...fields });
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status, code });
      expect((await stack.nats.readAll()).length).toBe(before);
    });
  });
});

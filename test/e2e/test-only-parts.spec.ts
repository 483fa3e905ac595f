import { ServiceProcess } from '../support/processes';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { startStack, type Stack } from '../support/stack';

/** The conversation's events in the log: a refused start leaves only its ConversationCreated. */
async function conversationTypes(stack: Stack, cid: string): Promise<string[]> {
  return (await stack.nats.readAll()).filter((e) => e.event.conversationId === cid).map((e) => e.event.type);
}

describe('an engine with the test-only parts off, as deploy/ runs it (STEERLINE_SCRIPTED_MODEL=off, STEERLINE_FAIL_TOOL=off, no default model)', () => {
  let fake: FakeOpenAI;
  let stack: Stack;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    // An empty STEERLINE_DEFAULT_MODEL is unset: the test stack's default is taken away.
    stack = await startStack({ env: { STEERLINE_SCRIPTED_MODEL: 'off', STEERLINE_FAIL_TOOL: 'off', STEERLINE_DEFAULT_MODEL: '', OPENAI_BASE_URL: fake.baseUrl } });
  });
  afterAll(async () => {
    await stack?.close();
    await fake?.close();
  });
  const conversation = async () => (await stack.api('POST', '/conversations')).body.id as string;

  it('refuses a turn that asks for the scripted model, 400 invalid_request naming STEERLINE_SCRIPTED_MODEL, and appends nothing', async () => {
    const cid = await conversation();
    for (const whenBusy of ['reject', 'queue']) {
      const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'hi', model: { provider: 'scripted', script: [] }, whenBusy });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('STEERLINE_SCRIPTED_MODEL=off') });
    }
    expect(await conversationTypes(stack, cid)).toEqual(['ConversationCreated']);
  });

  it('refuses a turn that names no model, 400 invalid_request naming STEERLINE_DEFAULT_MODEL, and appends nothing', async () => {
    const cid = await conversation();
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'hi' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('STEERLINE_DEFAULT_MODEL') });
    expect(await conversationTypes(stack, cid)).toEqual(['ConversationCreated']);
  });

  it('offers the model no fail tool: a call of it is an unknown_tool result the model sees, and the turn goes on', async () => {
    fake.answer({ toolCalls: [{ id: 'call_fail', name: 'fail', args: { message: 'boom' } }] }, { text: 'carried on' });
    const cid = await conversation();
    const prompt = 'try to fail';
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt, model: { provider: 'openai', name: 'gpt-test' } });
    expect(res.status).toBe(202);
    const events = await stack.turnEnded(res.body.turnId);
    const request = fake.requests.find((r) => r.body?.messages?.some((m: { content: unknown }) => m.content === prompt))!;
    expect(request.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(expect.arrayContaining(['sleep', 'echo']));
    expect(request.body.tools.map((t: { function: { name: string } }) => t.function.name)).not.toContain('fail');
    expect(events.find((e) => e.event.type === 'ToolCallFinished')?.event.data).toMatchObject({ name: 'fail', ok: false, error: { code: 'unknown_tool' } });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'carried on' } });
  });
});

describe('STEERLINE_DEFAULT_MODEL: what a turn that names no model runs', () => {
  const DEFAULT = { provider: 'scripted', name: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 300 } } }, { text: 'from the default' }] };
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_DEFAULT_MODEL: JSON.stringify(DEFAULT) } });
  });
  afterAll(() => stack?.close());

  it('a turn without a model runs the configured default, recorded on its TurnStarted; one queued behind it, on its TurnQueued', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const first = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'no model given' });
    expect(first.status).toBe(202);
    const queued = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'nor here', whenBusy: 'queue' });
    expect(queued.status).toBe(202);
    expect(queued.body.status).toBe('queued');
    const events = await stack.turnEnded(first.body.turnId);
    expect(events[0].event).toMatchObject({ type: 'TurnStarted', data: { prompt: 'no model given', model: DEFAULT } });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'from the default' } });
    const next = await stack.turnEnded(queued.body.turnId);
    expect(next[0].event).toMatchObject({ type: 'TurnQueued', data: { model: DEFAULT } });
    expect(next.find((e) => e.event.type === 'TurnStarted')?.event.data).toMatchObject({ model: DEFAULT });
  });
});

describe('an engine process with a bad STEERLINE_DEFAULT_MODEL', () => {
  it.each([
    // Not 'gpt-4o': that is an agent's name, a valid default (agent-default-model.spec.ts).
    ['that is neither JSON nor an agent name', 'openai/gpt-4o', 'not JSON, nor an agent name'],
    ['whose provider is not configured', '{"provider":"openai","name":"gpt-4o"}', 'model provider openai is not configured'],
  ])('does not start with one %s, and says why in one line naming the variable', async (_what, value, why) => {
    const engine = new ServiceProcess('engine', { NATS_URL: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', STEERLINE_DEFAULT_MODEL: value, OPENAI_BASE_URL: '', OPENAI_API_KEY: '' });
    const { code } = await engine.finished;
    expect(code).toBe(1);
    const said = engine.lines.filter((l) => l.includes('STEERLINE_DEFAULT_MODEL'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(`engine failed to start: invalid engine configuration: STEERLINE_DEFAULT_MODEL: ${why}`);
    expect(engine.lines.some((l) => l.includes('engine ready'))).toBe(false);
  });
});

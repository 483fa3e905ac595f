import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SteerlineError, uuidv7, type ModelsAnswer, type StartTurnAnswer, type ToolsAnswer } from '@steerline/contracts';
import { request, serveTools } from '@steerline/runtime';
import { BUILTIN_TOOLS } from '../../apps/engine/src/tools/tool.registry';
import { startFakeAnthropic, type FakeAnthropic } from '../support/fake-anthropic';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

const OPENAI_KEY = 'sk-test-default-0123456789';
const ANTHROPIC_KEY = 'sk-ant-test-0123456789';
const LOCAL_KEY = 'local-secret-0123456789';
const INSTRUCTIONS = 'You review code. Answer in three bullet points at most.';
const SETTINGS = { temperature: 0.3, topP: 0.8, maxOutputTokens: 300, toolChoice: { name: 'echo' }, parallelToolCalls: false, stop: ['END', 'STOP'], seed: 11 };
const spec = (name: string) => BUILTIN_TOOLS.find((t) => t.spec.name === name)!.spec;
const openaiTool = (name: string) => ({ type: 'function', function: { name, description: spec(name).description, parameters: spec(name).parameters } });

/** A turn's agent fields (docs/design.md §6.1, "A turn's agent") on both providers' wire, named endpoints, discovery, and refusals. */
describe('a turn’s instructions, settings, tool allow-list and model endpoint', () => {
  let fake: FakeOpenAI;
  let local: FakeOpenAI;
  let anthropic: FakeAnthropic;
  let stack: Stack;
  let dir: string;

  beforeAll(async () => {
    [fake, local, anthropic] = await Promise.all([startFakeOpenAI(), startFakeOpenAI(), startFakeAnthropic()]);
    dir = mkdtempSync(join(tmpdir(), 'steerline-models-'));
    const endpoint = { provider: 'openai', baseURL: local.baseUrl, apiKeyEnv: 'STEERLINE_TEST_LOCAL_KEY' };
    writeFileSync(
      join(dir, 'models.json'),
      JSON.stringify({
        endpoints: {
          local: { ...endpoint, headers: { 'X-Org': 'steerline-tests' }, maxTokensParam: 'max_completion_tokens' },
          elsewhere: { ...endpoint, tenants: ['someone-else'] },
        },
      }),
    );
    stack = await startStack({
      env: {
        OPENAI_BASE_URL: fake.baseUrl,
        OPENAI_API_KEY: OPENAI_KEY,
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
        ANTHROPIC_API_KEY: ANTHROPIC_KEY,
        STEERLINE_MODELS: join(dir, 'models.json'),
        STEERLINE_TEST_LOCAL_KEY: LOCAL_KEY,
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await Promise.all([fake?.close(), local?.close(), anthropic?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const conversation = async () => (await stack.api('POST', '/conversations')).body.id as string;
  async function startTurn(body: Record<string, unknown>) {
    const cid = await conversation();
    const res = await stack.api('POST', `/conversations/${cid}/turns`, body);
    expect(res.status).toBe(202);
    return { cid, tid: res.body.turnId as string };
  }
  const userSaid = (prompt: string) => (r: { body: any }) => r.body?.messages?.some((m: { role: string; content: unknown }) => m.role === 'user' && JSON.stringify(m.content).includes(prompt));

  it('openai gets a system message first, every setting under its own name and only the allowed tools', async () => {
    fake.answer({ text: 'ok' });
    const prompt = `Review the parser ${uuidv7()}`;
    const { tid } = await startTurn({ prompt, model: { provider: 'openai', name: 'gpt-test' }, instructions: INSTRUCTIONS, settings: SETTINGS, tools: ['echo', 'sl*'] });
    const events = await stack.turnEnded(tid);
    const [sent] = fake.requests.filter(userSaid(prompt));
    expect(sent.body).toEqual({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: INSTRUCTIONS },
        { role: 'user', content: prompt },
      ],
      tools: [openaiTool('sleep'), openaiTool('echo')],
      tool_choice: { type: 'function', function: { name: 'echo' } },
      parallel_tool_calls: false,
      temperature: 0.3,
      top_p: 0.8,
      max_tokens: 300,
      stop: ['END', 'STOP'],
      seed: 11,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(events[0].event).toMatchObject({ type: 'TurnStarted', version: 3, data: { instructions: INSTRUCTIONS, settings: SETTINGS, tools: ['echo', 'sl*'] } });
  });

  it('a named endpoint gets the turn with its own key, headers and max_completion_tokens; the default endpoint gets nothing', async () => {
    local.answer({ text: 'ok' });
    const prompt = `On the local model ${uuidv7()}`;
    const { tid } = await startTurn({ prompt, model: { provider: 'openai', endpoint: 'local', name: 'qwen3' }, settings: { maxOutputTokens: 64, toolChoice: 'required' }, tools: ['echo'] });
    const events = await stack.turnEnded(tid);
    expect(fake.requests.filter(userSaid(prompt))).toEqual([]);
    const [sent] = local.requests.filter(userSaid(prompt));
    expect(sent.headers.authorization).toBe(`Bearer ${LOCAL_KEY}`);
    expect(sent.headers['x-org']).toBe('steerline-tests');
    expect(sent.body).toEqual({
      model: 'qwen3',
      messages: [{ role: 'user', content: prompt }],
      tools: [openaiTool('echo')],
      tool_choice: 'required',
      max_completion_tokens: 64,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(events[0].event.data).toMatchObject({ model: { provider: 'openai', endpoint: 'local', name: 'qwen3' } });
  });

  it('anthropic gets system, its settings under its own names (seed has none) and only the allowed tools', async () => {
    anthropic.answer({ text: 'ok' });
    const prompt = `Review on claude ${uuidv7()}`;
    const { tid } = await startTurn({ prompt, model: { provider: 'anthropic', name: 'claude-test' }, instructions: INSTRUCTIONS, settings: SETTINGS, tools: ['ech*'] });
    await stack.turnEnded(tid);
    const [sent] = anthropic.requests.filter(userSaid(prompt));
    expect(`${sent.headers['x-api-key'] ?? ''} ${sent.headers.authorization ?? ''}`).toContain(ANTHROPIC_KEY);
    expect(sent.body).toEqual({
      model: 'claude-test',
      max_tokens: 300,
      system: INSTRUCTIONS,
      messages: [{ role: 'user', content: [{ type: 'text', text: prompt }] }],
      tools: [{ name: 'echo', description: spec('echo').description, input_schema: { type: 'object', ...spec('echo').parameters } }],
      tool_choice: { type: 'tool', name: 'echo', disable_parallel_tool_use: true },
      temperature: 0.3,
      top_p: 0.8,
      stop_sequences: ['END', 'STOP'],
      stream: true,
    });
  });

  it('a call to a tool the turn does not allow is never run: the model sees an unknown_tool result, and the turn goes on', async () => {
    // `fail` would fail the whole turn if it ran.
    fake.answer({ toolCalls: [{ id: 'call_fail', name: 'fail', args: {} }] }, { text: 'understood' });
    const prompt = `Try a tool ${uuidv7()}`;
    const { tid } = await startTurn({ prompt, model: { provider: 'openai', name: 'gpt-test' }, tools: ['echo'] });
    const events = await stack.turnEnded(tid);
    expect(events.find((e) => e.event.type === 'ToolCallFinished')!.event.data).toMatchObject({ name: 'fail', ok: false, error: { code: 'unknown_tool' } });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'understood' } });
    const [, second] = fake.requests.filter(userSaid(prompt));
    expect(second.body.tools).toEqual([openaiTool('echo')]);
    expect(second.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_fail', content: expect.stringMatching(/^Error: no tool named fail/) });
  });

  it('the scripted model is given the same fields, and its call to a tool outside the allow-list gets unknown_tool too', async () => {
    const prompt = `Scripted ${uuidv7()}`;
    const script = [{ tool: { name: 'fail', args: {} } }, { text: 'fine' }];
    const { tid } = await startTurn({ prompt, model: { provider: 'scripted', script }, instructions: INSTRUCTIONS, settings: { temperature: 0 }, tools: ['echo', 'sleep'] });
    const events = await stack.turnEnded(tid);
    expect(events.find((e) => e.event.type === 'ToolCallFinished')!.event.data).toMatchObject({ ok: false, error: { code: 'unknown_tool' } });
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    const seen = stack.model.requests.filter((r) => r.messages.some((m) => m.content === prompt));
    expect(seen.map((r) => ({ step: r.step, instructions: r.instructions, settings: r.settings, tools: r.tools.map((t) => t.name) }))).toEqual([
      { step: 1, instructions: INSTRUCTIONS, settings: { temperature: 0 }, tools: ['sleep', 'echo'] },
      { step: 2, instructions: INSTRUCTIONS, settings: { temperature: 0 }, tools: ['sleep', 'echo'] },
    ]);
  });

  it('a steer is still delivered after the tool results, and the next request keeps the system prompt, settings and tools', async () => {
    fake.answer({ toolCalls: [{ id: 'call_sleep', name: 'sleep', args: { ms: 3000 } }] }, { text: 'Kept the API.' });
    const prompt = `Refactor ${uuidv7()}`;
    const settings = { temperature: 1, seed: 5 };
    const { tid } = await startTurn({ prompt, model: { provider: 'openai', name: 'gpt-test' }, instructions: INSTRUCTIONS, settings, tools: ['sleep'] });
    await stack.turnHas(tid, 'ToolCallStarted');
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'Keep the public API' }, { Prefer: 'wait=30' });
    expect(steer.body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2 });
    await stack.turnEnded(tid);
    const [first, second] = fake.requests.filter(userSaid(prompt));
    expect(second.body.messages).toEqual([
      { role: 'system', content: INSTRUCTIONS },
      { role: 'user', content: prompt },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_sleep', type: 'function', function: { name: 'sleep', arguments: '{"ms":3000}' } }] },
      { role: 'tool', tool_call_id: 'call_sleep', content: 'slept 3000 ms' },
      { role: 'user', content: 'Keep the public API' },
    ]);
    const { messages: _m1, ...rest1 } = first.body;
    const { messages: _m2, ...rest2 } = second.body;
    expect(rest2).toEqual(rest1);
    expect(rest1).toMatchObject({ temperature: 1, seed: 5, tools: [openaiTool('sleep')] });
  });

  it('a start over NATS naming an agent is resolved by the engine from the agent store and records the version on TurnStarted; an unknown agent is refused, nothing appended', async () => {
    const model = (text: string) => ({ provider: 'scripted', script: [{ text }] });
    expect((await stack.api('POST', '/agents', { name: 'reviewer', model: model('v1'), settings: { temperature: 1 } })).status).toBe(201);
    for (const v of ['v2', 'v3']) expect((await stack.api('PUT', '/agents/reviewer', { model: model(v), instructions: `instructions ${v}` })).status).toBe(200);
    const cid = await conversation();
    const start = (body: Record<string, unknown>) => request<StartTurnAnswer>(stack.nats.nc, stack.nats.s.startTurn, { tenantId: 'default', conversationId: cid, prompt: 'hi', ...body }, { timeoutMs: 10_000, noResponders: 'unavailable' });
    await expect(start({ agent: 'ghost' })).rejects.toMatchObject({ code: 'not_found', message: 'agent ghost not found' });
    expect(await conversationLog(cid)).toEqual(['ConversationCreated']);
    const latest = await stack.turnEnded((await start({ agent: 'reviewer' })).turnId);
    expect(latest[0].event.data).toMatchObject({ agent: { name: 'reviewer', version: 3 }, instructions: 'instructions v3', model: model('v3') });
    const { turnId } = await start({ agent: 'reviewer@3', instructions: INSTRUCTIONS, tools: [] });
    const events = await stack.turnEnded(turnId);
    expect(events[0].event.data).toMatchObject({ agent: { name: 'reviewer', version: 3 }, instructions: INSTRUCTIONS, tools: [] });
    expect(events[0].event.data).not.toHaveProperty('settings');
  });

  const conversationLog = async (cid: string) => (await stack.nats.readAll()).filter((e) => e.event.conversationId === cid).map((e) => e.event.type);

  const refusals: [string, Record<string, unknown>, RegExp][] = [
    ['temperature 3', { settings: { temperature: 3 } }, /^settings\.temperature: /],
    ['300 tool patterns', { tools: Array.from({ length: 300 }, (_, i) => `tool_${i}`) }, /^tools: /],
    ['an unknown endpoint', { model: { provider: 'openai', endpoint: 'nowhere', name: 'x' } }, /^model\.endpoint: no openai endpoint named nowhere/],
    ['an endpoint not offered to the tenant', { model: { provider: 'openai', endpoint: 'elsewhere', name: 'x' } }, /^model\.endpoint: no openai endpoint named elsewhere/],
    ['instructions over 100 000 characters', { instructions: 'x'.repeat(100_001) }, /^instructions: /],
    ['a tool choice naming a tool the turn does not allow', { tools: ['echo'], settings: { toolChoice: { name: 'sleep' } } }, /^settings\.toolChoice\.name: tool sleep is not allowed/],
  ];

  it.each(refusals)('%s is answered 400 naming the field over HTTP, and refused by the engine itself over NATS; nothing is appended', async (_what, fields, message) => {
    const cid = await conversation();
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'hi', ...fields });
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'invalid_request' });
    expect(res.body.error.message).toMatch(message);
    const direct = request(stack.nats.nc, stack.nats.s.startTurn, { tenantId: 'default', conversationId: cid, prompt: 'hi', ...fields }, { timeoutMs: 10_000, noResponders: 'unavailable' });
    await expect(direct).rejects.toBeInstanceOf(SteerlineError);
    await expect(direct).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringMatching(message) });
    expect(await conversationLog(cid)).toEqual(['ConversationCreated']);
  });

  it('engines answer which tools a tenant’s turns are offered and which endpoints it may name, never with a key', async () => {
    const ask = <T>(subject: string, tenantId: string) => request<T>(stack.nats.nc, subject, { tenantId }, { timeoutMs: 10_000, noResponders: 'unavailable' });
    const parameters = { type: 'object', properties: { text: { type: 'string' } } };
    const service = serveTools(stack.nats.nc, stack.prefix, 'words', [{ descriptor: { name: 'word_count', description: 'Counts words.', parameters }, run: async () => 1 }]);
    await service.ready;
    const { tools } = await eventually(async () => {
      const answer = await ask<ToolsAnswer>(stack.nats.s.queryTools, 'default');
      return answer.tools.some((t) => t.name === 'word_count') ? answer : undefined;
    }, 10_000, 'the engine to learn the remote tool');
    service.stop();
    expect(tools).toEqual([
      ...BUILTIN_TOOLS.map((t) => ({ ...t.spec, source: 'builtin', approval: false })),
      { name: 'word_count', description: 'Counts words.', parameters, source: 'service', approval: false },
    ]);
    const models = await ask<ModelsAnswer>(stack.nats.s.queryModels, 'default');
    expect(models).toEqual({
      providers: ['scripted', 'openai', 'anthropic'],
      endpoints: [
        { name: 'default', provider: 'scripted' },
        { name: 'default', provider: 'openai', baseURL: fake.baseUrl },
        { name: 'default', provider: 'anthropic', baseURL: `${anthropic.baseUrl}/` },
        { name: 'local', provider: 'openai', baseURL: local.baseUrl },
      ],
    });
    const other = await ask<ModelsAnswer>(stack.nats.s.queryModels, 'someone-else');
    expect(other.endpoints.map((e) => e.name)).toContain('elsewhere');
    const said = JSON.stringify([tools, models, other]);
    for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, LOCAL_KEY, 'steerline-tests']) expect(said).not.toContain(secret);
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/env';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { ServiceProcess } from '../support/processes';
import { startStack, type Stack } from '../support/stack';

const INSTRUCTIONS = 'You review code. Never change the public API.';
const SETTINGS = { temperature: 0.4, topP: 0.9, maxOutputTokens: 200, toolChoice: 'auto', parallelToolCalls: false, stop: ['END'], seed: 3 };

/** A turn's agent fields live in its log (TurnStarted), so the engine that resumes it sends the model exactly what the lost one did. */
describe('a turn with instructions, settings and a tool allow-list whose engine is killed', () => {
  let stack: Stack;
  let fake: FakeOpenAI;
  let dir: string;
  let env: Record<string, string>;
  const engines: ServiceProcess[] = [];
  const engine = async (id: string, extra: Record<string, string> = {}) => {
    const p = new ServiceProcess('engine', { ...env, STEERLINE_ENGINE_ID: id, STEERLINE_ENGINE_LEASE_MS: '1500', ...extra });
    engines.push(p);
    await p.ready();
    return p;
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    stack = await startStack({ engine: false });
    dir = mkdtempSync(join(tmpdir(), 'steerline-models-'));
    writeFileSync(join(dir, 'models.json'), JSON.stringify({ endpoints: { local: { provider: 'openai', baseURL: fake.baseUrl, apiKeyEnv: 'STEERLINE_TEST_LOCAL_KEY' } } }));
    env = { ...stack.env, STEERLINE_MODELS: join(dir, 'models.json'), STEERLINE_TEST_LOCAL_KEY: 'local-secret' };
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.kill()));
    await stack?.close();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('kill -9 while the model answers: the resumed turn sends the same system prompt, settings and allowed tools to the same endpoint', async () => {
    const lost = await engine('engine-agent-lost');
    fake.answer({ hang: true }, { text: 'reviewed' });
    const cid = (await stack.api('POST', '/conversations')).body.id;
    const prompt = 'Review the parser change';
    const body = { prompt, model: { provider: 'openai', endpoint: 'local', name: 'qwen3' }, instructions: INSTRUCTIONS, settings: SETTINGS, tools: ['echo', 'sl*'] };
    const res = await stack.api('POST', `/conversations/${cid}/turns`, body);
    expect(res.status).toBe(202);
    const tid = res.body.turnId as string;
    const sent = () => fake.requests.filter((r) => r.body?.messages?.some((m: { content: string }) => m.content === prompt));
    await eventually(() => (sent().length === 1 ? true : undefined), 10_000, 'the first model request');
    // Frozen first, so it cannot answer or append while the survivor starts; then killed for real.
    lost.signal('SIGSTOP');
    await engine('engine-agent-survivor');
    await lost.kill();
    const events = await stack.turnEnded(tid, 40_000);
    expect(events.find((e) => e.event.type === 'TurnResumed')?.event.data).toMatchObject({ engineId: 'engine-agent-survivor', previousEngineId: 'engine-agent-lost' });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'reviewed' } });
    const [first, again] = sent();
    expect(again.body).toEqual(first.body);
    expect(again.headers.authorization).toBe('Bearer local-secret');
    expect(first.body).toMatchObject({
      model: 'qwen3',
      messages: [{ role: 'system', content: INSTRUCTIONS }, { role: 'user', content: prompt }],
      temperature: 0.4,
      top_p: 0.9,
      max_tokens: 200,
      tool_choice: 'auto',
      parallel_tool_calls: false,
      stop: ['END'],
      seed: 3,
    });
    expect(first.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['sleep', 'echo']);
  });

  it('an invalid STEERLINE_MODELS stops the engine at start with one line naming the entry and the field', async () => {
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ endpoints: { local: { provider: 'openai', baseURL: 'not a url', apiKeyEnv: 'STEERLINE_TEST_LOCAL_KEY' } } }));
    const p = new ServiceProcess('engine', { ...env, STEERLINE_MODELS: join(dir, 'bad.json') });
    engines.push(p);
    expect((await p.exited).code).toBe(1);
    await p.finished;
    const refusals = p.lines.filter((l) => l.includes('STEERLINE_MODELS'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(/endpoints\.local\.baseURL: /);
    expect(p.lines.join('\n')).not.toContain('local-secret');
  });
});

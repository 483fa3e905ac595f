import { checkInvariants } from '@steerline/contracts';
import { type StoredEvent } from '@steerline/runtime';
import { BUILTIN_TOOLS } from '../../apps/engine/src/tools/tool.registry';
import { UNFINISHED_TOOL_RESULT } from '../../apps/engine/src/models/openai/openai.messages';
import { eventually } from '../support/env';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { startStack, type Stack } from '../support/stack';

const API_KEY = 'sk-test-steerline-0123456789';
const model = { provider: 'openai', name: 'gpt-test' };

describe('the openai provider against an OpenAI-compatible server over real HTTP', () => {
  let fake: FakeOpenAI;
  let stack: Stack;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    stack = await startStack({ env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: API_KEY } });
  });
  afterAll(async () => {
    await stack?.close();
    await fake?.close();
  });

  async function startTurn(prompt: string, cid?: string) {
    cid ??= (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt, model });
    expect(res.status).toBe(202);
    return { cid, tid: res.body.turnId as string };
  }
  const ended = (tid: string) => stack.turnEnded(tid);
  const requestsFor = (prompt: string) => fake.requests.filter((r) => r.body?.messages?.some((m: { role: string; content: string }) => m.role === 'user' && m.content === prompt));
  const typesOf = (events: StoredEvent[]) => events.map((e) => e.event.type);

  it('a steer sent during a tool call reaches the second request as its own user message after the tool message', async () => {
    fake.answer({ toolCalls: [{ id: 'call_sleep', name: 'sleep', args: { ms: 3000 } }], usage: { prompt_tokens: 21, completion_tokens: 7 } }, { text: 'Kept the public API.' });
    const prompt = 'Refactor the parser';
    const { tid } = await startTurn(prompt);
    // Sent once the tool runs, with seconds of it left however slow the machine.
    await stack.turnHas(tid, 'ToolCallStarted');
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'Keep the public API' }, { Prefer: 'wait=30' });
    expect(steer.status).toBe(200);
    expect(steer.body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2 });

    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { steps: 2, text: 'Kept the public API.' } });
    const [, second] = requestsFor(prompt);
    expect(second.body.messages).toEqual([
      { role: 'user', content: prompt },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_sleep', type: 'function', function: { name: 'sleep', arguments: '{"ms":3000}' } }] },
      { role: 'tool', tool_call_id: 'call_sleep', content: 'slept 3000 ms' },
      { role: 'user', content: 'Keep the public API' },
    ]);
    // Usage is part of the record.
    const responded = events.find((e) => e.event.type === 'ModelResponded' && e.event.data.step === 1)!;
    expect(responded.event.data).toMatchObject({ usage: { inputTokens: 21, outputTokens: 7 }, toolCalls: [{ id: 'call_sleep', name: 'sleep', args: { ms: 3000 } }] });
    expect(checkInvariants(events, { requireSettled: true })).toEqual([]);
  });

  it('each request names the turn’s model, carries the configured API key and offers the tools with their JSON Schemas', async () => {
    fake.answer({ text: 'hello' });
    const prompt = 'Say hello';
    const { tid } = await startTurn(prompt);
    await ended(tid);
    const [request] = requestsFor(prompt);
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request.body.model).toBe('gpt-test');
    expect(request.body.tools).toEqual(
      BUILTIN_TOOLS.map((t) => ({ type: 'function', function: { name: t.spec.name, description: t.spec.description, parameters: t.spec.parameters } })),
    );
  });

  it('cancelling a turn aborts its in-flight model request within a second and drops its queued steer turn_cancelled', async () => {
    fake.answer({ hang: true });
    const prompt = 'Think for a long time';
    const { tid } = await startTurn(prompt);
    const request = await eventually(() => requestsFor(prompt)[0], 5000, 'the model request');
    const queued = await stack.api('POST', `/turns/${tid}/steers`, { text: 'never mind' });
    expect(queued.status).toBe(202);

    expect((await stack.api('POST', `/turns/${tid}/cancel`, { reason: 'changed my mind' })).status).toBe(202);
    await eventually(() => request.abortedAt, 1000, 'the model request to be aborted');

    const events = await ended(tid);
    expect(typesOf(events).slice(-2)).toEqual(['SteerDropped', 'TurnCancelled']);
    expect(events.at(-2)!.event.data).toMatchObject({ reason: 'turn_cancelled', text: 'never mind' });
    expect(checkInvariants(events, { requireSettled: true })).toEqual([]);
  });

  it('the turn after one cancelled mid-tool sends an error result for the call that never finished, so the endpoint accepts the context', async () => {
    fake.answer({ toolCalls: [{ id: 'call_long', name: 'sleep', args: { ms: 60_000 } }] });
    const { cid, tid } = await startTurn('Start a long job');
    await eventually(async () => (typesOf(await stack.turnEvents(tid)).includes('ToolCallStarted') ? true : undefined), 5000, 'the tool call');
    expect((await stack.api('POST', `/turns/${tid}/cancel`)).status).toBe(202);
    await ended(tid);

    fake.answer({ text: 'Started over.' });
    const next = await startTurn('Start over', cid);
    expect((await ended(next.tid)).at(-1)!.event.type).toBe('TurnCompleted');
    const [request] = requestsFor('Start over');
    expect(request.body.messages.map((m: { role: string; content: unknown; tool_call_id?: string }) => [m.role, m.tool_call_id ?? null, m.content])).toEqual([
      ['user', null, 'Start a long job'],
      ['assistant', null, null],
      ['tool', 'call_long', UNFINISHED_TOOL_RESULT],
      ['user', null, 'Start over'],
    ]);
  });
});

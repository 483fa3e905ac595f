import { Agent, OpenAIProvider, tool } from '@openai/agents';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { stepCountIs, streamText } from 'ai';
import { z } from 'zod';
import { SteerlineClient } from '@steerline/client';
import { Steerline as AiSdkSteerline } from '@steerline/ai-sdk';
import { Steerline as AgentsSteerline } from '@steerline/openai-agents';
import { uuidv7 } from '@steerline/contracts';
import { adapterEnv, DriverTurns, type Driver } from '../support/adapter-drivers';
import { eventually } from '../support/env';
import type { RecordedRequest } from '../support/fake-openai';
import { approvalRequested } from '../support/stack';

/** What the adapters do besides steering: approvals, cancel, failures, usage, live output, the Agents SDK's model names. */
const { env, gates, drivers } = adapterEnv();

const conversation = async () => (await env.stack.api('POST', '/conversations')).body.id as string;
const userTexts = (r: RecordedRequest) => (r.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'user').map((m) => m.content);
const guardedCall = { toolCalls: [{ id: 'c1', name: 'guarded', args: {} }], usage: { prompt_tokens: 3, completion_tokens: 4 } };

describe.each(drivers)('$name', (driver: Driver) => {
  const turns = new DriverTurns(env, driver);
  const start = turns.start.bind(turns);
  const requests = () => turns.requests();

  it('a call of a listed tool waits in turn.approval(call) until a person approves it; a steer sent meanwhile follows its result', async () => {
    const { tid } = await start([guardedCall, { text: 'done' }], { approvals: { tools: ['guarded'] } });
    await approvalRequested(env.stack, tid, 'c1');
    const steer = env.stack.api('POST', `/turns/${tid}/steers`, { text: 'and be quick' }, { Prefer: 'wait=30' });
    await env.stack.turnHas(tid, 'SteerQueued', { where: (d) => d.text === 'and be quick' });
    expect((await env.stack.api('POST', `/turns/${tid}/approvals/c1`, { decision: 'approve' })).status).toBe(200);
    expect(await turns.turn.done).toBe('done');
    expect((await steer).body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2 });
    const messages = requests()[1].body.messages as { role: string; content: unknown; tool_call_id?: string }[];
    expect(messages.slice(-2)).toEqual([expect.objectContaining({ role: 'tool', tool_call_id: 'c1' }), { role: 'user', content: 'and be quick' }]);
    expect(JSON.stringify(messages.at(-2)!.content)).toContain('guarded ran');
    const events = await env.stack.turnEnded(tid);
    expect(events.map((e) => e.event.type)).toEqual([
      'TurnStarted',
      'ModelRequested',
      'ModelResponded',
      'ToolApprovalRequested',
      'SteerQueued',
      'ToolApprovalDecided',
      'ToolCallStarted',
      'ToolCallFinished',
      'SteeringDelivered',
      'ModelRequested',
      'ModelResponded',
      'TurnCompleted',
    ]);
    expect(events.find((e) => e.event.type === 'ModelResponded')!.event.data).toMatchObject({ toolCalls: [{ id: 'c1', name: 'guarded' }], usage: { inputTokens: 3, outputTokens: 4 } });
    expect(events.find((e) => e.event.type === 'ToolCallFinished')!.event.data).toMatchObject({ toolCallId: 'c1', ok: true, output: 'guarded ran' });
  });

  it('a denied call keeps Steerline’s denied result, and the turn goes on to its next request', async () => {
    const { tid } = await start([guardedCall, { text: 'fine' }], { approvals: { tools: ['guarded'] } });
    await approvalRequested(env.stack, tid, 'c1');
    expect((await env.stack.api('POST', `/turns/${tid}/approvals/c1`, { decision: 'deny', reason: 'not today' })).status).toBe(200);
    expect(await turns.turn.done).toBe('fine');
    const events = await env.stack.turnEnded(tid);
    expect(events.filter((e) => e.event.type === 'ToolCallFinished').map((e) => e.event.data)).toEqual([expect.objectContaining({ toolCallId: 'c1', ok: false, error: expect.objectContaining({ code: 'denied' }) })]);
    expect(requests()).toHaveLength(2);
  });

  it('a cancel from any client aborts turn.signal; run rejects, the turn is cancelled and no model call follows', async () => {
    const g = `${driver.name}:${uuidv7()}`;
    // One answer only: nothing is left queued on the fake for the next test.
    const { tid } = await start([{ toolCalls: [{ id: 'c1', name: 'hold', args: { gate: g } }] }]);
    await gates.entered(g);
    expect((await env.stack.api('POST', `/turns/${tid}/cancel`, { reason: 'changed my mind' })).status).toBe(202);
    await eventually(async () => turns.turn.signal.aborted || undefined, 10_000, 'turn.signal to abort');
    gates.release(g);
    await expect(turns.turn.done).rejects.toThrow();
    const events = await env.stack.turnEnded(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCancelled', data: { reason: 'changed my mind' } });
    expect(requests()).toHaveLength(1);
  });

  it('an error the agent’s loop throws (the model refuses the request) fails the turn with its message', async () => {
    const { tid } = await start([{ status: 400, message: 'the model is not here' }]);
    await expect(turns.turn.done).rejects.toThrow();
    const events = await env.stack.turnEnded(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnFailed', data: { error: { code: 'runner_error' } } });
    expect(JSON.stringify(events.at(-1)!.event.data)).toContain('the model is not here');
  });
});

it('streamText’s text deltas reach SSE watchers live as ModelDelta, numbered by the engine, joined the text ModelResponded records', async () => {
  const cid = await conversation();
  const client = new SteerlineClient({ baseUrl: env.stack.url });
  const watcher = new AbortController();
  const deltas: { step: number; index: number; text: string }[] = [];
  const watching = (async () => {
    for await (const m of client.events(cid, { live: true, signal: watcher.signal })) {
      if ('live' in m && m.type === 'ModelDelta') deltas.push(m.message as (typeof deltas)[number]);
      if (!('live' in m) && m.type === 'TurnCompleted') return;
    }
  })();
  env.fake.answer({ text: 'three words here', chunkDelayMs: 5 });
  const turn = await new AiSdkSteerline({ baseUrl: env.stack.url }).startTurn({ conversationId: cid, prompt: 'go' });
  const model = createOpenAICompatible({ name: 'fake', baseURL: env.fake.baseUrl, apiKey: 'test' })('fake-model');
  await turn.run((hooks) => streamText({ model, stopWhen: stepCountIs(5), ...hooks }));
  await watching;
  watcher.abort();
  expect(deltas.map((d) => [d.step, d.index])).toEqual(deltas.map((_, i) => [1, i]));
  expect(deltas.map((d) => d.text).join('')).toBe('three words here');
});

it('an Agents SDK agent whose model is a name resolves it with the run config’s model provider, reporting its answers the same', async () => {
  const cid = await conversation();
  env.fake.answer({ toolCalls: [{ id: 'c1', name: 'add', args: { a: 2, b: 3 } }] }, { text: 'five' });
  const add = tool({ name: 'add', description: 'Adds.', parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => String(a + b) });
  const agent = new Agent({ name: 'adder', instructions: 'Add.', model: 'fake-model', tools: [add] });
  const turn = await new AgentsSteerline({ baseUrl: env.stack.url }).startTurn({ conversationId: cid, prompt: 'add 2 and 3' });
  const modelProvider = new OpenAIProvider({ baseURL: env.fake.baseUrl, apiKey: 'test', useResponses: false });
  const result = await turn.run(agent, 'add 2 and 3', { runConfig: { modelProvider, tracingDisabled: true } });
  expect(result.finalOutput).toBe('five');
  const events = await env.stack.turnEnded(turn.id);
  expect(events.filter((e) => e.event.type === 'ModelResponded').map((e) => e.event.data)).toEqual([
    expect.objectContaining({ step: 1, toolCalls: [{ id: 'c1', name: 'add', args: { a: 2, b: 3 } }] }),
    expect.objectContaining({ step: 2, text: 'five', toolCalls: [] }),
  ]);
  expect(events.find((e) => e.event.type === 'ToolCallFinished')!.event.data).toMatchObject({ toolCallId: 'c1', ok: true, output: '5' });
  expect(userTexts(env.fake.requests.at(-1)!)).toEqual(['add 2 and 3']);
});

it('a call of a tool the AI SDK agent does not have is recorded with the tool error the model reads, and the turn goes on', async () => {
  const [generateTextDriver] = drivers;
  const turns = new DriverTurns(env, generateTextDriver);
  const { tid } = await turns.start([{ toolCalls: [{ id: 'c1', name: 'nope', args: {} }] }, { text: 'sorry' }]);
  expect(await turns.turn.done).toBe('sorry');
  const events = await env.stack.turnEnded(tid);
  expect(events.find((e) => e.event.type === 'ModelResponded')!.event.data).toMatchObject({ toolCalls: [{ id: 'c1', name: 'nope' }] });
  expect(events.find((e) => e.event.type === 'ToolCallFinished')!.event.data).toMatchObject({ toolCallId: 'c1', ok: false, error: { code: 'tool_error' } });
  expect(turns.requests()[1].body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
});

import { checkInvariants } from '@steerline/contracts';
import { type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { startStack, type Stack } from '../support/stack';

const model = { provider: 'openai', name: 'gpt-test' };

describe('the openai provider when the endpoint fails', () => {
  let fake: FakeOpenAI;
  let stack: Stack;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    // No key: a local server such as Ollama. Two retries (three attempts) and a short per-attempt timeout, yet
    // long enough (2.5 s) that a busy machine does not turn a quick answer into a timeout and an extra attempt.
    stack = await startStack({ env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MAX_RETRIES: '2', OPENAI_TIMEOUT_MS: '2500' } });
  });
  afterAll(async () => {
    await stack?.close();
    await fake?.close();
  });

  async function startTurn(prompt: string) {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt, model });
    expect(res.status).toBe(202);
    return res.body.turnId as string;
  }
  const ended = (tid: string) => stack.turnEnded(tid);
  const requestsFor = (prompt: string) => fake.requests.filter((r) => r.body?.messages?.[0]?.content === prompt);
  const ofType = (events: StoredEvent[], type: string) => events.filter((e) => e.event.type === type);

  it('an endpoint that keeps answering 5xx is tried three times, then the turn fails and its queued steer is dropped turn_failed', async () => {
    // The first attempt is answered 1.5 s after it arrives: the steer, sent once it has, is queued before the turn can fail.
    fake.answer(...[1500, 300, 300].map((delayMs) => ({ status: 503, message: 'overloaded', delayMs })));
    const prompt = 'Work against a broken endpoint';
    const tid = await startTurn(prompt);
    await eventually(() => requestsFor(prompt)[0], 20_000, 'the first attempt');
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'try harder' });
    expect(steer.status).toBe(202);

    const events = await ended(tid);
    expect(requestsFor(prompt)).toHaveLength(3);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnFailed', data: { steps: 1, error: { code: 'model_unavailable' } } });
    expect(ofType(events, 'SteerDropped').map((e) => e.event.data)).toEqual([expect.objectContaining({ steerId: steer.body.steerId, reason: 'turn_failed', text: 'try harder' })]);
    expect(ofType(events, 'ModelResponded')).toHaveLength(0);
    expect(checkInvariants(events, { requireSettled: true })).toEqual([]);
  });

  it('a 4xx answer other than 429 is not retried: the turn fails after one request with the endpoint’s reason', async () => {
    fake.answer({ status: 404, message: 'model gpt-test does not exist' });
    const prompt = 'Use a model that does not exist';
    const tid = await startTurn(prompt);
    const events = await ended(tid);
    expect(requestsFor(prompt)).toHaveLength(1);
    const failed = events.at(-1)!.event;
    expect(failed).toMatchObject({ type: 'TurnFailed', data: { error: { code: 'model_rejected' } } });
    expect(failed.type === 'TurnFailed' && failed.data.error.message).toContain('model gpt-test does not exist');
  });

  it('a 429 is tried again after the endpoint’s Retry-After, and the answer that follows drives the turn', async () => {
    fake.answer({ status: 429, message: 'slow down', headers: { 'retry-after': '1' } }, { text: 'answered after waiting' });
    const prompt = 'Ask a busy endpoint';
    const tid = await startTurn(prompt);
    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'answered after waiting' } });
    const [limited, retried] = requestsFor(prompt);
    expect(retried.body).toEqual(limited.body);
    expect(retried.receivedAt - limited.receivedAt).toBeGreaterThanOrEqual(1000);
  });

  it('a 429 asking for a longer wait than the engine will give fails the turn at once, as model_rate_limited', async () => {
    fake.answer({ status: 429, message: 'quota exhausted', headers: { 'retry-after': '3600' } });
    const prompt = 'Ask an exhausted endpoint';
    const tid = await startTurn(prompt);
    const events = await ended(tid);
    expect(requestsFor(prompt)).toHaveLength(1);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnFailed', data: { error: { code: 'model_rate_limited' } } });
  });

  it('a malformed tool call is asked for again, and the valid answer that follows drives the turn', async () => {
    fake.answer(
      { toolCalls: [{ id: 'call_bad', name: 'echo', rawArguments: '{"text": "cut off' }] },
      { toolCalls: [{ id: 'call_good', name: 'echo', args: { text: 'hi' } }] },
      { text: 'echoed' },
    );
    const prompt = 'Echo something';
    const tid = await startTurn(prompt);
    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { steps: 2, text: 'echoed' } });
    expect(requestsFor(prompt)).toHaveLength(3);
    // The malformed answer left no trace in the log: one request and one answer per step.
    expect(ofType(events, 'ModelRequested')).toHaveLength(2);
    expect(ofType(events, 'ModelResponded').map((e) => e.event.data)).toEqual([
      expect.objectContaining({ step: 1, toolCalls: [{ id: 'call_good', name: 'echo', args: { text: 'hi' } }] }),
      expect.objectContaining({ step: 2, text: 'echoed' }),
    ]);
    expect(ofType(events, 'ToolCallFinished')[0].event.data).toMatchObject({ ok: true, output: 'hi' });
  });

  it('an attempt that times out is abandoned and tried again', async () => {
    fake.answer({ hang: true }, { text: 'answered the second time' });
    const prompt = 'Answer slowly';
    const tid = await startTurn(prompt);
    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'answered the second time' } });
    const [first, second] = requestsFor(prompt);
    expect(first.abortedAt).toBeDefined();
    expect(second.body).toEqual(first.body);
  });

  it('a stream that goes silent mid-answer is abandoned after the attempt’s timeout and the answer asked again', async () => {
    fake.answer({ text: 'half of an answer that never ends', stallAfter: 3 }, { text: 'the whole answer' });
    const prompt = 'Answer, then stop mid-sentence';
    const tid = await startTurn(prompt);
    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'the whole answer' } });
    const [first, second] = requestsFor(prompt);
    expect(first.abortedAt).toBeDefined();
    expect(second.body).toEqual(first.body);
    // Nothing of the broken answer is recorded.
    expect(ofType(events, 'ModelResponded').map((e) => e.event.data)).toEqual([expect.objectContaining({ text: 'the whole answer' })]);
  });

  it('without an API key configured, no Authorization header is sent', async () => {
    fake.answer({ text: 'hi' });
    const prompt = 'Talk to a local server';
    await ended(await startTurn(prompt));
    expect(requestsFor(prompt)[0].headers.authorization).toBeUndefined();
  });
});

import { decodeJson, type ModelDelta, type StoredEvent } from '@steerline/contracts';
import { eventually } from '../support/env';
import { startFakeAnthropic, type FakeAnthropic } from '../support/fake-anthropic';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { startStack, type Stack } from '../support/stack';

/**
 * Every provider streams (DESIGN §8.1): the deltas of a step joined are the
 * text its ModelResponded records — also after a stream cut mid-answer was
 * retried — and a cancel aborts a stream. The real providers talk to fakes
 * over real HTTP that speak their streaming wire formats.
 */
describe('model answers stream as live deltas', () => {
  let stack: Stack;
  let openai: FakeOpenAI;
  let anthropic: FakeAnthropic;
  const deltas: ModelDelta[] = [];

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    anthropic = await startFakeAnthropic();
    stack = await startStack({
      env: {
        OPENAI_BASE_URL: openai.baseUrl,
        OPENAI_API_KEY: 'sk-test',
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
        ANTHROPIC_API_KEY: 'ak-test',
        OPENAI_MAX_RETRIES: '2',
        ANTHROPIC_MAX_RETRIES: '2',
      },
    });
    stack.nats.nc.subscribe(`${stack.prefix}.live.>`, {
      callback: (_err, msg) => {
        const m = decodeJson(msg.data) as ModelDelta;
        if (m.type === 'ModelDelta') deltas.push(m);
      },
    });
    await stack.nats.nc.flush();
  });
  afterAll(async () => {
    await stack?.close();
    await openai?.close();
    await anthropic?.close();
  });

  const run = async (model: unknown) => {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'stream it', model });
    expect(res.status).toBe(202);
    return res.body.turnId as string;
  };
  /** Each step's deltas, in index order, joined, next to the text its ModelResponded records. */
  const compare = (tid: string, events: StoredEvent[]) =>
    events
      .filter((e) => e.event.type === 'ModelResponded')
      .map((e) => {
        const { step, text } = e.event.data as { step: number; text: string };
        const mine = deltas.filter((d) => d.turnId === tid && d.step === step).sort((a, b) => a.index - b.index);
        expect(mine.map((d) => d.index)).toEqual(mine.map((_, i) => i));
        return { step, joined: mine.map((d) => d.text).join(''), text, count: mine.length };
      });
  // Live messages and the log travel separately: wait for the deltas of the last answer.
  const settledDeltas = async (tid: string, events: StoredEvent[]) =>
    eventually(() => {
      const rows = compare(tid, events);
      return rows.every((r) => r.joined === r.text) ? rows : undefined;
    }, 5_000, 'every step’s deltas');

  it.each([
    ['scripted', () => ({ provider: 'scripted', script: [{ tool: { name: 'echo', args: { text: 'x' } } }, { text: 'All done, in several words.', delayMs: 200 }] })],
    [
      'openai',
      () => {
        openai.answer({ text: 'Let me check.', toolCalls: [{ id: 'c1', name: 'echo', args: { text: 'x' } }] }, { text: 'All done, in several words.' });
        return { provider: 'openai', name: 'gpt-test' };
      },
    ],
    [
      'anthropic',
      () => {
        anthropic.answer({ text: 'Let me check.', toolCalls: [{ id: 'toolu_1', name: 'echo', args: { text: 'x' } }] }, { text: 'All done, in several words.' });
        return { provider: 'anthropic', name: 'claude-test' };
      },
    ],
  ])('%s: the deltas of each step joined are the text ModelResponded records', async (_name, model) => {
    const tid = await run(model());
    const events = await stack.turnEnded(tid);
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    const rows = await settledDeltas(tid, events);
    expect(rows.at(-1)).toMatchObject({ text: 'All done, in several words.' });
    expect(rows.at(-1)!.count).toBeGreaterThan(3);
  });

  it.each([
    ['openai', () => (openai.answer({ text: 'The whole answer, word by word.', cutAfter: 4 }, { text: 'The whole answer, word by word.' }), { provider: 'openai', name: 'gpt-test' })],
    ['anthropic', () => (anthropic.answer({ text: 'The whole answer, word by word.', cutAfter: 4 }, { text: 'The whole answer, word by word.' }), { provider: 'anthropic', name: 'claude-test' })],
  ])('%s: a stream cut mid-answer is retried as a whole answer; nothing partial is recorded or streamed twice', async (_name, model) => {
    const tid = await run(model());
    const events = await stack.turnEnded(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'The whole answer, word by word.' } });
    expect(events.filter((e) => e.event.type === 'ModelResponded')).toHaveLength(1);
    const [row] = await settledDeltas(tid, events);
    expect(row.joined).toBe('The whole answer, word by word.');
  });

  it('anthropic: tool results and a steer go back as one user turn, the steer its own text block after the results', async () => {
    anthropic.answer({ toolCalls: [{ id: 'toolu_s', name: 'sleep', args: { ms: 800 } }] }, { text: 'Steered.' });
    const tid = await run({ provider: 'anthropic', name: 'claude-test' });
    await eventually(async () => ((await stack.turnEvents(tid)).some((e) => e.event.type === 'ToolCallStarted') ? true : undefined));
    expect((await stack.api('POST', `/turns/${tid}/steers`, { text: 'Go left' })).status).toBe(202);
    await stack.turnEnded(tid);
    const second = anthropic.requests.filter((r) => r.body?.messages?.[0]?.content?.[0]?.text === 'stream it').at(-1)!;
    // The configured key, however this SDK version sends it.
    expect(`${second.headers['x-api-key'] ?? ''} ${second.headers.authorization ?? ''}`).toContain('ak-test');
    expect(second.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'stream it' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_s', name: 'sleep', input: { ms: 800 } }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_s', content: 'slept 800 ms' },
          { type: 'text', text: 'Go left' },
        ],
      },
    ]);
  });

  it.each([
    ['openai', () => (openai.answer({ text: 'a b c d e f g h i j k l m n o p', chunkDelayMs: 150 }), { provider: 'openai', name: 'gpt-test' }), () => openai.requests],
    ['anthropic', () => (anthropic.answer({ text: 'a b c d e f g h i j k l m n o p', chunkDelayMs: 150 }), { provider: 'anthropic', name: 'claude-test' }), () => anthropic.requests],
  ])('%s: a cancel during a stream aborts it', async (_name, model, requests) => {
    const tid = await run(model());
    await eventually(() => (deltas.some((d) => d.turnId === tid) ? true : undefined), 5_000, 'the first delta');
    const request = requests().at(-1)!;
    expect((await stack.api('POST', `/turns/${tid}/cancel`, {})).status).toBe(202);
    const events = await stack.turnEnded(tid);
    expect(events.at(-1)!.event.type).toBe('TurnCancelled');
    expect(events.some((e) => e.event.type === 'ModelResponded')).toBe(false);
    await eventually(() => request.abortedAt, 5_000, 'the stream to be aborted');
  });
});

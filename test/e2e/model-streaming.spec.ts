import { type ChatMessage, type ModelDelta, type ModelSpec } from '@steerline/contracts';
import { decodeJson, type StoredEvent } from '@steerline/runtime';
import { AnthropicModel } from '../../apps/engine/src/models/anthropic/anthropic.model';
import type { ModelRequest } from '../../apps/engine/src/models/model.provider';
import { BUILTIN_TOOLS } from '../../apps/engine/src/tools/tool.registry';
import { eventually } from '../support/env';
import { startFakeAnthropic, type FakeAnthropic } from '../support/fake-anthropic';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { startStack, type Stack } from '../support/stack';

/**
 * Every provider streams (docs/design.md §11): the deltas of a step joined are the
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
        OPENAI_MAX_RETRIES: '2',
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
        ANTHROPIC_API_KEY: 'ak-test',
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
    }, 20_000, 'every step’s deltas');

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
  ])('%s: a stream cut mid-answer is retried as a whole answer; nothing partial is recorded or streamed twice', async (_name, model) => {
    const tid = await run(model());
    const events = await stack.turnEnded(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'The whole answer, word by word.' } });
    expect(events.filter((e) => e.event.type === 'ModelResponded')).toHaveLength(1);
    const [row] = await settledDeltas(tid, events);
    expect(row.joined).toBe('The whole answer, word by word.');
  });

  it('openai: a cancel during a stream aborts it', async () => {
    // About 6 s of stream: the cancel, sent once the first delta is seen, lands well before its end.
    openai.answer({ text: 'a b c d e f g h i j k l m n o p', chunkDelayMs: 400 });
    const requests = () => openai.requests;
    const tid = await run({ provider: 'openai', name: 'gpt-test' });
    await eventually(() => (deltas.some((d) => d.turnId === tid) ? true : undefined), 20_000, 'the first delta');
    const request = requests().at(-1)!;
    expect((await stack.api('POST', `/turns/${tid}/cancel`, {})).status).toBe(202);
    const events = await stack.turnEnded(tid);
    expect(events.at(-1)!.event.type).toBe('TurnCancelled');
    expect(events.some((e) => e.event.type === 'ModelResponded')).toBe(false);
    await eventually(() => request.abortedAt, 20_000, 'the stream to be aborted');
  });

  // The provider itself, against its fake over real HTTP: what it sends and how it reads the stream.
  describe('anthropic', () => {
    const provider = () => new AnthropicModel({ baseUrl: anthropic.baseUrl, apiKey: 'ak-test', timeoutMs: 30_000, maxRetries: 2, retryBaseMs: 10, maxTokens: 1024 });
    const request = (messages: ChatMessage[], onDelta?: (t: string) => void) =>
      ({ step: 2, model: { provider: 'anthropic', name: 'claude-test' } satisfies ModelSpec, messages, tools: BUILTIN_TOOLS.map((t) => t.spec), onDelta }) satisfies ModelRequest;
    const turnId = '0190a000-0000-7000-8000-000000000001';
    const prompt: ChatMessage[] = [{ role: 'user', content: 'stream it', turnId }];

    it('streams text and tool use; the deltas joined are the answer’s text; tool results and a steer go back as one user turn, the steer after the results', async () => {
      anthropic.answer({ text: 'Let me check the tests first.', toolCalls: [{ id: 'toolu_1', name: 'echo', args: { text: 'x' } }], usage: { input_tokens: 12, output_tokens: 7 } });
      const pieces: string[] = [];
      const context: ChatMessage[] = [
        ...prompt,
        { role: 'assistant', content: '', turnId, step: 1, toolCalls: [{ id: 'toolu_s', name: 'sleep', args: { ms: 800 } }] },
        { role: 'tool', content: 'slept 800 ms', turnId, step: 1, toolCallId: 'toolu_s' },
        { role: 'user', content: 'Go left', turnId, steerId: '0190a000-0000-7000-8000-000000000002' },
      ];
      const answer = await provider().complete(request(context, (t) => pieces.push(t)), new AbortController().signal);
      expect(answer).toEqual({ text: 'Let me check the tests first.', toolCalls: [{ id: 'toolu_1', name: 'echo', args: { text: 'x' } }], usage: { inputTokens: 12, outputTokens: 7 } });
      expect(pieces.length).toBeGreaterThan(3);
      expect(pieces.join('')).toBe(answer.text);
      const sent = anthropic.requests.at(-1)!;
      expect(sent.path).toBe('/v1/messages');
      expect(`${sent.headers['x-api-key'] ?? ''} ${sent.headers.authorization ?? ''}`).toContain('ak-test');
      expect(sent.body).toMatchObject({ model: 'claude-test', max_tokens: 1024, stream: true });
      expect(sent.body.tools.map((t: { name: string }) => t.name)).toEqual(BUILTIN_TOOLS.map((t) => t.spec.name));
      expect(sent.body.messages).toEqual([
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

    it('a stream cut mid-answer is retried as a whole answer; the deltas joined are still the text, nothing sent twice', async () => {
      anthropic.answer({ text: 'The whole answer, word by word.', cutAfter: 4 }, { text: 'The whole answer, word by word.' });
      const before = anthropic.requests.length;
      const pieces: string[] = [];
      const answer = await provider().complete(request(prompt, (t) => pieces.push(t)), new AbortController().signal);
      expect(answer.text).toBe('The whole answer, word by word.');
      expect(anthropic.requests.length - before).toBe(2);
      expect(pieces.join('')).toBe(answer.text);
    });

    it('a cancel during a stream aborts it', async () => {
      anthropic.answer({ text: 'a b c d e f g h i j k l m n o p', chunkDelayMs: 150 });
      const controller = new AbortController();
      const call = provider().complete(request(prompt, () => controller.abort(new Error('turn cancelled'))), controller.signal);
      await expect(call).rejects.toThrow('turn cancelled');
      await eventually(() => anthropic.requests.at(-1)!.abortedAt, 20_000, 'the stream to be aborted');
    });

    it('a 529 overloaded is tried again; a 400 fails at once as model_rejected', async () => {
      anthropic.answer({ status: 529, message: 'overloaded' }, { text: 'fine now' });
      await expect(provider().complete(request(prompt), new AbortController().signal)).resolves.toMatchObject({ text: 'fine now' });
      anthropic.answer({ status: 400, message: 'bad model' });
      await expect(provider().complete(request(prompt), new AbortController().signal)).rejects.toMatchObject({ code: 'model_rejected' });
    });
  });
});

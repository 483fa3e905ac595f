import { readSse, SteerlineClient, type SseMessage } from '@steerline/client';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

/** Live output (docs/design.md §11) end to end: the engine publishes, the gateway interleaves, the log is untouched. */
describe('live output on the event stream', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  /**
   * Resolves once the stream is open (the gateway answers only once it listens
   * to the conversation live), with the messages up to the turn's end to come:
   * live output is not replayed, so a turn started before that would lose some.
   */
  async function readTurn(cid: string, query = ''): Promise<{ messages: Promise<SseMessage[]> }> {
    const controller = new AbortController();
    const res = await fetch(`${stack.url}/v1/conversations/${cid}/events${query}`, { signal: controller.signal });
    const read = async () => {
      const out: SseMessage[] = [];
      try {
        for await (const m of readSse(res.body!)) {
          out.push(m);
          if (['TurnCompleted', 'TurnFailed', 'TurnCancelled'].includes(m.event)) break;
        }
      } finally {
        controller.abort();
      }
      return out;
    };
    return { messages: read() };
  }

  it('streams a scripted answer as ModelDeltas before its ModelResponded, and a sleep’s ToolProgress while it runs', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const reading = (await readTurn(cid)).messages;
    const withoutLive = (await readTurn(cid, '?live=0')).messages;
    const script = [{ tool: { name: 'sleep', args: { ms: 1_100 } } }, { text: 'The answer is\nforty  two.', delayMs: 500 }];
    const { turnId } = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script } })).body;
    const messages = await reading;
    const log = await stack.turnEnded(turnId);

    // The stored events are exactly the log, in order; live messages come between them.
    const stored = messages.filter((m) => !['ModelDelta', 'ToolProgress'].includes(m.event));
    expect(stored.map((m) => JSON.parse(m.data).id)).toEqual(expect.arrayContaining(log.map((e) => e.event.id)));
    expect((await withoutLive).filter((m) => ['ModelDelta', 'ToolProgress'].includes(m.event))).toEqual([]);

    const at = (type: string, step: number) => messages.findIndex((m) => m.event === type && JSON.parse(m.data).data?.step === step);
    const deltas = messages.map((m, i) => ({ m, i })).filter(({ m }) => m.event === 'ModelDelta').map(({ m, i }) => ({ i, d: JSON.parse(m.data) }));
    const step2 = deltas.filter(({ d }) => d.step === 2);
    expect(step2.length).toBeGreaterThan(3);
    expect(step2.map(({ d }) => d.index)).toEqual(step2.map((_, k) => k));
    expect(step2.every(({ i, d }) => i < at('ModelResponded', 2) && d.turnId === turnId)).toBe(true);
    const responded = log.find((e) => e.event.type === 'ModelResponded' && e.event.data.step === 2)!.event as { data: { text: string } };
    expect(step2.map(({ d }) => d.text).join('')).toBe(responded.data.text);

    const progress = messages.map((m, i) => ({ m, i })).filter(({ m }) => m.event === 'ToolProgress');
    expect(progress.length).toBeGreaterThanOrEqual(3);
    for (const { i, m } of progress) {
      expect(i).toBeGreaterThan(at('ToolCallStarted', 1));
      expect(i).toBeLessThan(at('ToolCallFinished', 1));
      expect(JSON.parse(m.data)).toMatchObject({ type: 'ToolProgress', turnId, step: 1, toolCallId: expect.any(String) });
    }
    expect(JSON.parse(progress.at(-1)!.m.data).progress).toBe(1);
  });

  it('the client library yields live output between the events with live: true, and leaves it out by default', async () => {
    const client = new SteerlineClient({ baseUrl: stack.url });
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const read = (live: boolean) => {
      const kinds: string[] = [];
      const stop = new AbortController();
      const done = (async () => {
        for await (const e of live ? client.events(cid, { live: true, signal: stop.signal }) : client.events(cid, { signal: stop.signal })) {
          kinds.push('live' in e ? `live:${e.type}` : e.type);
          if (e.type === 'TurnCompleted') stop.abort();
        }
        return kinds;
      })();
      return { kinds, done };
    };
    const withLiveReader = read(true);
    const withoutLiveReader = read(false);
    // Live output is not replayed: the turn starts once both streams have replayed the conversation's creation, so they listen live.
    await eventually(() => (withLiveReader.kinds.length > 0 && withoutLiveReader.kinds.length > 0) || undefined, 10_000, 'both streams to be open');
    const [withLive, withoutLive] = [withLiveReader.done, withoutLiveReader.done];
    await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script: [{ text: 'one two three four', delayMs: 300 }] } });
    const kinds = await withLive;
    expect(kinds.filter((k) => k === 'live:ModelDelta').length).toBeGreaterThan(2);
    expect(kinds.indexOf('live:ModelDelta')).toBeLessThan(kinds.indexOf('ModelResponded'));
    expect((await withoutLive).some((k) => k.startsWith('live:'))).toBe(false);
  });
});

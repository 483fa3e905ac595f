import { LIVE_TYPES } from '@steerline/contracts';
import { readSubject, type StoredEvent } from '@steerline/runtime';
import { readSse, type SseMessage } from '@steerline/client';
import { startGateway, type RunningGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { jsonLogger } from '../../apps/gateway/src/logger';
import { eventually, NATS_URL } from '../support/env';
import { startStack, type Stack } from '../support/stack';

/** One open event stream, read event by event with a bounded wait each. */
interface OpenStream {
  status: number;
  next(timeoutMs?: number): Promise<SseMessage | undefined>;
  close(): void;
}

async function openStream(baseUrl: string, cid: string, headers: Record<string, string> = {}, query = ''): Promise<OpenStream> {
  const controller = new AbortController();
  const res = await fetch(`${baseUrl}/v1/conversations/${cid}/events${query}`, { headers, signal: controller.signal });
  const iterator = res.body ? readSse(res.body)[Symbol.asyncIterator]() : undefined;
  return {
    status: res.status,
    // Generous: a loaded machine may take seconds between two events, and a test that waits never passes by it.
    async next(timeoutMs = 20_000) {
      if (!iterator) return undefined;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no event within ${timeoutMs} ms`)), timeoutMs)));
      try {
        const r = await Promise.race([iterator.next(), timeout]);
        return r.done ? undefined : r.value;
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => controller.abort(),
  };
}

/** Reads until an event satisfies `stop` (inclusive) or the stream ends. */
async function readUntil(stream: OpenStream, stop: (m: SseMessage) => boolean, max = 200): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for (let i = 0; i < max; i++) {
    const m = await stream.next();
    if (!m) break;
    out.push(m);
    if (stop(m)) break;
  }
  return out;
}

// Live messages (ModelDelta, ToolProgress) come between the log's events; these tests are about the log.
const asLog = (messages: SseMessage[]) => messages.filter((m) => !(LIVE_TYPES as readonly string[]).includes(m.event)).map((m) => ({ streamSeq: Number(m.id), type: m.event, event: JSON.parse(m.data) }));
const expected = (log: StoredEvent[]) => log.map((e) => ({ streamSeq: e.streamSeq, type: e.event.type, event: e.event }));
const isTurnEnd = (m: SseMessage) => ['TurnCompleted', 'TurnCancelled', 'TurnFailed'].includes(m.event);

describe('a conversation’s events as Server-Sent Events straight from the log', () => {
  let stack: Stack;
  const logOf = (cid: string) => readSubject(stack.nats.js, stack.nats.jsm, stack.nats.s.stream, stack.nats.s.conversationEvents('default', cid));
  const newConversation = async () => (await stack.api('POST', '/conversations')).body.id as string;
  const startTurn = async (cid: string, script: unknown[]) => (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'work', model: { provider: 'scripted', script } })).body.turnId as string;
  const finished = (cid: string) => eventually(async () => ((await logOf(cid)).some((e) => e.event.type === 'TurnCompleted') ? true : undefined), 20_000, 'the turn to complete');

  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_SSE_HEARTBEAT_MS: '200' } });
  });
  afterAll(() => stack?.close());

  it('replays a finished conversation: id is the stream sequence, event the type, data the stored event', async () => {
    const cid = await newConversation();
    await startTurn(cid, [{ tool: { name: 'echo', args: { text: 'hi' } } }, { text: 'ok' }]);
    await finished(cid);
    const log = await logOf(cid);

    const res = await fetch(`${stack.url}/v1/conversations/${cid}/events`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let raw = '';
    while (!raw.includes('\n\nid:')) raw += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    // The stored bytes themselves, not a re-encoding.
    const stored = await stack.nats.jsm.streams.getMessage(stack.nats.s.stream, { seq: log[0].streamSeq });
    expect(raw).toContain(`id: ${log[0].streamSeq}\nevent: ConversationCreated\ndata: ${stored!.string()}\n\n`);

    const stream = await openStream(stack.url, cid);
    const got = await readUntil(stream, isTurnEnd);
    stream.close();
    expect(asLog(got)).toEqual(expected(log));
  });

  it('a client that disconnects mid-turn and resumes with Last-Event-ID gets the rest live, with no gap and no duplicate', async () => {
    const cid = await newConversation();
    // Step 1's 3 s tool: the turn is still running when the steer comes, a stream close and a round trip later.
    const tid = await startTurn(cid, [{ tool: { name: 'sleep', args: { ms: 3000 } } }, { tool: { name: 'sleep', args: { ms: 200 } } }, { text: 'done' }]);
    const first = await openStream(stack.url, cid);
    const before = await readUntil(first, (m) => m.event === 'ToolCallStarted');
    first.close();
    // Happens while nobody listens: it must still be in the resumed stream, once.
    expect((await stack.api('POST', `/turns/${tid}/steers`, { text: 'meanwhile' })).status).toBe(202);

    const resumed = await openStream(stack.url, cid, { 'Last-Event-ID': before.at(-1)!.id! });
    const after = await readUntil(resumed, isTurnEnd);
    resumed.close();
    expect(after.map((m) => m.event)).toContain('SteerQueued');
    expect(asLog([...before, ...after])).toEqual(expected(await logOf(cid)));
  });

  it('resumes after ?after= too, and Last-Event-ID wins over it, as a reconnecting browser resends the first URL', async () => {
    const cid = await newConversation();
    await startTurn(cid, [{ text: 'quick' }]);
    await finished(cid);
    const log = await logOf(cid);
    const cut = log[2].streamSeq;

    const byQuery = await openStream(stack.url, cid, {}, `?after=${cut}`);
    const fromQuery = await readUntil(byQuery, isTurnEnd);
    byQuery.close();
    expect(asLog(fromQuery)).toEqual(expected(log.filter((e) => e.streamSeq > cut)));

    const both = await openStream(stack.url, cid, { 'Last-Event-ID': String(log[3].streamSeq) }, `?after=${log[0].streamSeq}`);
    const fromHeader = await readUntil(both, isTurnEnd);
    both.close();
    expect(fromHeader[0].id).toBe(String(log[4].streamSeq));
  });

  it('a stream cut by a gateway shutdown resumes on a new gateway with no gap and no duplicate', async () => {
    const start = () => startGateway(loadGatewayConfig({ NATS_URL, STEERLINE_PREFIX: stack.prefix, PORT: '0' }), { logger: jsonLogger(['error']) });
    let gatewayA: RunningGateway | undefined = await start();
    let gatewayB: RunningGateway | undefined;
    try {
      const cid = await newConversation();
      await startTurn(cid, [{ tool: { name: 'sleep', args: { ms: 500 } } }, { tool: { name: 'sleep', args: { ms: 300 } } }, { text: 'done' }]);
      const onA = await openStream(gatewayA.url, cid);
      const beforeRestart = await readUntil(onA, (m) => m.event === 'ToolCallStarted');
      await gatewayA.close();
      gatewayA = undefined;
      // The shutdown ends the stream rather than cutting it mid-event.
      const tail = await readUntil(onA, () => false);
      const seen = [...beforeRestart, ...tail];

      gatewayB = await start();
      const onB = await openStream(gatewayB.url, cid, { 'Last-Event-ID': seen.at(-1)!.id! });
      const afterRestart = await readUntil(onB, isTurnEnd);
      onB.close();
      expect(asLog([...seen, ...afterRestart])).toEqual(expected(await logOf(cid)));
    } finally {
      await gatewayA?.close();
      await gatewayB?.close();
    }
  });

  it('sends heartbeat comments while nothing happens', async () => {
    const cid = await newConversation();
    const res = await fetch(`${stack.url}/v1/conversations/${cid}/events`);
    const reader = res.body!.getReader();
    let raw = '';
    const deadline = Date.now() + 3_000;
    while (!raw.includes(': heartbeat') && Date.now() < deadline) raw += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(raw).toContain('\n\n: heartbeat\n\n');
  });

  it('answers 404 not_found for a conversation that does not exist, before any stream starts', async () => {
    const res = await stack.api('GET', '/conversations/0190c6a0-0000-7000-8000-000000000000/events');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});

import { readConversation } from '@steerline/runtime';
import { appendAll, bigConversation, type BigConversation } from '../../scripts/bench/big-conversation';
import { ReadModelsClient } from '../../apps/gateway/src/nats/read-models.client';
import { startStack, type Stack } from '../support/stack';

/**
 * Issue 27: one GET of a long conversation used to kill the persistence
 * process (its reply was over NATS's max_payload). 10 000 messages and about
 * 10 MB, built from hand-made events the projector projects like any others.
 */
describe('a 10 000-message, 10 MB conversation', () => {
  let stack: Stack;
  let big: BigConversation;
  let lastSeq: number;

  beforeAll(async () => {
    stack = await startStack();
    big = bigConversation({ messages: 10_000, outputBytes: 2000, turns: 5 });
    lastSeq = await appendAll(stack.nats.js, stack.nats.s, big.events);
    await stack.persistence.projector.waitForSeq(lastSeq, 120_000);
  }, 180_000);
  afterAll(() => stack?.close());

  it('reads back whole, in order, with 200', async () => {
    const res = await fetch(`${stack.url}/v1/conversations/${big.conversationId}`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(Buffer.byteLength(text)).toBeGreaterThan(10_000_000);
    const view = JSON.parse(text);
    expect(view.id).toBe(big.conversationId);
    expect(view.messages).toHaveLength(big.messages);
    expect(big.messages).toBeGreaterThanOrEqual(10_000);
    expect(view.turns.map((t: { id: string }) => t.id)).toEqual(big.turnIds);
    expect(view.steers.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual(big.steerIds.map((id) => [id, 'delivered']));
    // Every turn's messages in order: its prompt first, its closing answer last.
    const starts = view.messages.flatMap((m: { role: string; content: string }, i: number) => (m.role === 'user' && m.content.startsWith('turn ') ? [i] : []));
    expect(starts).toHaveLength(5);
    expect(view.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'turn 4 done' });
    expect(view.messages.filter((m: { role: string }) => m.role === 'tool').every((m: { content: string }) => m.content.length === 2000)).toBe(true);
  });

  it('asks each next page of the persistence instance that answered the one before, which read it ahead (docs/design.md §14)', async () => {
    const { nc, s } = stack.nats;
    const asked: string[] = [];
    // Core NATS hands every request to every subscriber: this one only watches (it never answers).
    const counted = async () => Object.fromEntries((await stack.persistence.metrics.pagesAt.get()).values.map((v) => [String(v.labels.read_ahead), v.value]));
    const before = await counted();
    const watch = nc.subscribe(`${s.queryConversation}.at.*`, { callback: (_err, msg) => void asked.push(msg.subject) });
    await nc.flush();
    try {
      const view = (await (await fetch(`${stack.url}/v1/conversations/${big.conversationId}`)).json()) as { messages: { content: string }[] };
      expect(view.messages).toHaveLength(big.messages);
      expect(view.messages.at(-1)).toMatchObject({ content: 'turn 4 done' });
    } finally {
      watch.unsubscribe();
    }
    // ~10 MB in pages under NATS's 1 MB max_payload: every page after the first was asked there, of one instance.
    expect(asked.length).toBeGreaterThanOrEqual(10);
    expect(new Set(asked).size).toBe(1);
    expect(asked[0].startsWith(`${s.queryConversation}.at.`)).toBe(true);
    expect(asked[0]).toMatch(/\.at\.[0-9a-f]{16}$/);
    // Each answered from the page read ahead while the one before crossed (the first page's request, with its header, started it).
    const after = await counted();
    const taken = (after.yes ?? 0) - (before.yes ?? 0);
    expect(taken + (after.no ?? 0) - (before.no ?? 0)).toBe(asked.length);
    expect(taken).toBeGreaterThanOrEqual(asked.length / 2);
  });

  it('asks the queue group for a page when the instance named for it no longer answers', async () => {
    const { nc, s } = stack.nats;
    const reads = new ReadModelsClient(nc, s);
    const query = { tenantId: big.tenantId, conversationId: big.conversationId, from: { section: 'messages' as const, offset: 5000 } };
    const page = await reads.conversation(query, s.queryConversationAt('0000000000000000'));
    if (!('layout' in page)) throw new Error('the page came without its layout');
    expect(page.layout.next).toMatchObject({ section: 'messages' });
    expect(page.layout.next!.offset).toBeGreaterThan(5000);
    // It names the instance that did answer, for the page after it.
    expect(page.at).toMatch(/\.qry\.conversation\.at\.[0-9a-f]{16}$/);
    expect(page.at).not.toBe(s.queryConversationAt('0000000000000000'));
  });

  it('reads a range of messages that spans several pages', async () => {
    const res = await fetch(`${stack.url}/v1/conversations/${big.conversationId}?afterMessage=4000&limit=3000`);
    expect(res.status).toBe(200);
    const whole = (await (await fetch(`${stack.url}/v1/conversations/${big.conversationId}`)).json()) as { messages: unknown[] };
    const view = (await res.json()) as { messages: unknown[]; turns: unknown[] };
    expect(view.messages).toEqual(whole.messages.slice(4000, 7000));
    expect(view.turns).toHaveLength(5);
  });

  it('answers its turns and receipts', async () => {
    for (const turnId of big.turnIds) {
      const turn = await stack.api('GET', `/turns/${turnId}`);
      expect(turn.status).toBe(200);
      expect(turn.body).toMatchObject({ id: turnId, status: 'completed' });
    }
    const steerId = big.steerIds[3];
    const receipt = await stack.api('GET', `/turns/${big.turnIds[3]}/steers/${steerId}`);
    expect(receipt.status).toBe(200);
    expect(receipt.body).toMatchObject({ steerId, status: 'delivered' });
  });

  it('its whole history reads back for the next turn (direct gets, then one consumer), in order, with its last sequence', async () => {
    const subject = stack.nats.s.conversationEvents(big.tenantId, big.conversationId);
    const history = await readConversation(stack.nats.jsm, stack.nats.s.stream, subject);
    expect(history.events.map((e) => e.event.id)).toEqual(big.events.map((e) => e.id));
    expect(history.lastSeq).toBe(lastSeq);
  });

  it('replays every event over SSE', async () => {
    const controller = new AbortController();
    const res = await fetch(`${stack.url}/v1/conversations/${big.conversationId}/events`, { signal: controller.signal });
    expect(res.status).toBe(200);
    const decoder = new TextDecoder();
    let buffer = '';
    let count = 0;
    let last = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const id = /^id: ?(\d+)$/m.exec(frame);
        if (id) {
          count++;
          last = Number(id[1]);
        }
      }
      if (last >= lastSeq) break;
    }
    controller.abort();
    expect(count).toBe(big.events.length);
    // 10 000 events replayed and parsed: a loaded CI host took over Jest's default 30 s once.
  }, 120_000);
});

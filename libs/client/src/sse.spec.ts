import { readSse, type SseMessage } from './sse';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
}

async function all(chunks: string[]): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for await (const m of readSse(streamOf(chunks))) out.push(m);
  return out;
}

describe('the client’s Server-Sent Events parser', () => {
  it('reads id, event and data, and skips comments and the retry field', async () => {
    expect(await all(['retry: 1000\n\n: heartbeat\n\nid: 3\nevent: SteerQueued\ndata: {"a":1}\n\n'])).toMatchObject([{ id: '3', event: 'SteerQueued', data: '{"a":1}' }]);
  });

  it('joins several data lines with a line break and defaults the event type to message', async () => {
    expect(await all(['data: a\ndata: b\n\n'])).toMatchObject([{ id: undefined, event: 'message', data: 'a\nb' }]);
  });

  it('tells an event with an id line of its own from one without (live output keeps the last id)', async () => {
    expect(await all(['id: 3\nevent: SteerQueued\ndata: {}\n\nevent: ModelDelta\ndata: {"text":"a"}\n\n'])).toEqual([
      { id: '3', event: 'SteerQueued', data: '{}', hasId: true },
      { id: '3', event: 'ModelDelta', data: '{"text":"a"}', hasId: false },
    ]);
  });

  it('handles events, lines and CRLF pairs split across chunks', async () => {
    const text = 'id: 1\r\nevent: A\r\ndata: x\r\n\r\nid: 2\r\nevent: B\r\ndata: y\r\n\r\n';
    const chunks = text.split('');
    expect(await all(chunks)).toMatchObject([
      { id: '1', event: 'A', data: 'x' },
      { id: '2', event: 'B', data: 'y' },
    ]);
  });

  it('drops an event cut off by the end of the stream', async () => {
    expect(await all(['id: 1\ndata: whole\n\nid: 2\ndata: half'])).toMatchObject([{ id: '1', event: 'message', data: 'whole' }]);
  });

  it('keeps multi-byte characters split across chunks intact', async () => {
    const bytes = new TextEncoder().encode('data: héllo ✓\n\n');
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (const b of bytes) c.enqueue(new Uint8Array([b]));
        c.close();
      },
    });
    const out: SseMessage[] = [];
    for await (const m of readSse(stream)) out.push(m);
    expect(out[0].data).toBe('héllo ✓');
  });
});

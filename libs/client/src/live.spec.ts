import { SteerlineClient } from './client';
import type { LiveMessage, StreamedEvent } from './types';

const event = (id: number, type: string) => `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ type, turnId: 't' })}\n\n`;
const live = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

/** A gateway that answers the first request with `body` and every later one with a stream that never ends. */
function gateway(body: string, requests: Headers[]): typeof fetch {
  return async (_url, init) => {
    requests.push(new Headers(init?.headers));
    const first = requests.length === 1;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        if (first) {
          c.enqueue(new TextEncoder().encode(body));
          c.close();
        } else {
          // As fetch does: aborting the request errors its body.
          init?.signal?.addEventListener('abort', () => c.error(new Error('aborted')), { once: true });
        }
      },
    });
    return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
}

describe('the client’s event stream with live messages', () => {
  it('hands ModelDelta and ToolProgress to onLive and resumes after the last log event, not after a live message', async () => {
    const requests: Headers[] = [];
    const body = event(7, 'ModelRequested') + live('ModelDelta', { turnId: 't', step: 1, index: 0, text: 'Hel' }) + event(8, 'ModelResponded') + live('ToolProgress', { turnId: 't', toolCallId: 'c', progress: 0.5 });
    const client = new SteerlineClient({ baseUrl: 'http://gateway', fetch: gateway(body, requests) });
    const lives: LiveMessage[] = [];
    const events: StreamedEvent[] = [];
    const abort = new AbortController();
    for await (const e of client.events('cid', { signal: abort.signal, onLive: (m) => lives.push(m), reconnectDelayMs: 1 })) {
      events.push(e);
      if (events.length === 2) setTimeout(() => abort.abort(), 50);
    }
    expect(events.map((e) => [e.id, e.type])).toEqual([[7, 'ModelRequested'], [8, 'ModelResponded']]);
    expect(lives).toEqual([
      { type: 'ModelDelta', data: { turnId: 't', step: 1, index: 0, text: 'Hel' } },
      { type: 'ToolProgress', data: { turnId: 't', toolCallId: 'c', progress: 0.5 } },
    ]);
    expect(requests[1]?.get('last-event-id')).toBe('8');
  });
});

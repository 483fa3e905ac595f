import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SteerlineClient } from './client';
import type { StreamedEvent } from './types';

const event = (id: number) => `id: ${id}\nevent: SteerQueued\ndata: ${JSON.stringify({ type: 'SteerQueued', turnId: 't' })}\n\n`;

/** A real HTTP server on loopback; `handle` gets each request with its number (from 1). */
async function serve(handle: (n: number, req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; server: Server; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    handle(requests.length, req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests };
}

async function take(client: SteerlineClient, n: number, opts: { idleTimeoutMs?: number }): Promise<StreamedEvent[]> {
  const events: StreamedEvent[] = [];
  const abort = new AbortController();
  const deadline = setTimeout(() => abort.abort(), 10_000);
  for await (const e of client.events('cid', { ...opts, signal: abort.signal, reconnectDelayMs: 1 })) {
    events.push(e);
    if (events.length === n) break;
  }
  clearTimeout(deadline);
  return events;
}

describe('the client’s event stream when the connection goes silent', () => {
  it('a stream that sends no byte for idleTimeoutMs is dropped and resumed after the last event, on a new connection', async () => {
    const { url, server, requests } = await serve((n, _req, res) => {
      // The first connection goes silent after one event, as a connection a network dropped without a reset does.
      res.write(n === 1 ? event(1) : event(2));
    });
    try {
      const events = await take(new SteerlineClient({ baseUrl: url }), 2, { idleTimeoutMs: 300 });
      expect(events.map((e) => e.id)).toEqual([1, 2]);
      expect(requests).toHaveLength(2);
      expect(requests[1].headers['last-event-id']).toBe('1');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('heartbeat comments keep a stream with no new event alive: no reconnect', async () => {
    const timers: NodeJS.Timeout[] = [];
    const { url, server, requests } = await serve((_n, _req, res) => {
      res.write(event(1));
      let beats = 0;
      const beat = setInterval(() => {
        res.write(': heartbeat\n\n');
        // After ten beats (about five idle timeouts of silence but for the comments), one more event.
        if (++beats === 10) res.write(event(2));
      }, 100);
      timers.push(beat);
    });
    try {
      const events = await take(new SteerlineClient({ baseUrl: url }), 2, { idleTimeoutMs: 300 });
      expect(events.map((e) => e.id)).toEqual([1, 2]);
      expect(requests).toHaveLength(1);
    } finally {
      timers.forEach(clearInterval);
      server.closeAllConnections();
      server.close();
    }
  });
});

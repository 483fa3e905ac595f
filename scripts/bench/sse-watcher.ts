import { request, type ClientRequest, type IncomingMessage } from 'node:http';

/**
 * A bare Server-Sent Events client for many streams at once (tests and the
 * bench open thousands): one plain HTTP request each, no agent, and only what
 * is needed kept — the ids received, comment lines, live message types.
 */
export interface SseWatcher {
  status: number;
  /** `id:` of every stored event received, in order. */
  ids: number[];
  /** Comment lines other than heartbeats. */
  comments: string[];
  /** `event:` of every message without an id (live messages), in order. */
  live: string[];
  /** When each id arrived (performance.now()), for latency figures. */
  arrivals: Map<number, number>;
  ended: boolean;
  res: IncomingMessage;
  /** Resolves once `ids` holds `seq` (or the stream ended). */
  reached(seq: number): Promise<void>;
  close(): void;
}

export function openSseWatcher(url: string, headers: Record<string, string> = {}, opts: { keepArrivals?: boolean; onLive?: () => void } = {}): Promise<SseWatcher> {
  return new Promise((resolve, reject) => {
    const req: ClientRequest = request(url, { agent: false, headers: { accept: 'text/event-stream', ...headers } });
    req.once('error', reject);
    req.once('response', (res) => {
      let buffer = '';
      const waits: Array<{ seq: number; resolve: () => void }> = [];
      const w: SseWatcher = {
        status: res.statusCode ?? 0,
        ids: [],
        comments: [],
        live: [],
        arrivals: new Map(),
        ended: false,
        res,
        reached(seq) {
          if (w.ended || (w.ids.at(-1) ?? 0) >= seq) return Promise.resolve();
          return new Promise((r) => waits.push({ seq, resolve: r }));
        },
        close: () => req.destroy(),
      };
      const settle = () => {
        for (let i = waits.length - 1; i >= 0; i--) {
          if (w.ended || (w.ids.at(-1) ?? 0) >= waits[i].seq) waits.splice(i, 1)[0].resolve();
        }
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          if (frame(w, buffer.slice(0, cut), opts.keepArrivals === true) === 'live') opts.onLive?.();
          buffer = buffer.slice(cut + 2);
        }
        settle();
      });
      const end = () => {
        w.ended = true;
        settle();
      };
      res.once('end', end);
      res.once('close', end);
      res.once('error', end);
      resolve(w);
    });
    req.end();
  });
}

function frame(w: SseWatcher, block: string, keepArrivals: boolean): 'stored' | 'live' | undefined {
  let id: number | undefined;
  let event: string | undefined;
  for (const line of block.split('\n')) {
    if (line.startsWith('id: ')) id = Number(line.slice(4));
    else if (line.startsWith('event: ')) event = line.slice(7);
    else if (line.startsWith(': ') && line !== ': heartbeat') w.comments.push(line.slice(2));
  }
  if (id !== undefined) {
    w.ids.push(id);
    if (keepArrivals) w.arrivals.set(id, performance.now());
    return 'stored';
  }
  if (event === undefined) return undefined;
  w.live.push(event);
  return 'live';
}

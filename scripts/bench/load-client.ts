/**
 * The bench's HTTP load, as a process of its own (started and driven by load.ts over IPC).
 *
 * One client for every HTTP figure, floors and Steerline alike, so a ratio compares servers and
 * not clients: `node:http` with a keep-alive agent, which costs a fraction of `fetch` (undici)
 * per request. Its own process, so its CPU is neither the servers' nor the bench's, and can be
 * read from /proc (load.ts does, around every block) to show it was not the bottleneck.
 */
import { Agent, request, type OutgoingHttpHeaders } from 'node:http';

export interface LoadSpec {
  method: 'GET' | 'POST';
  /**
   * Where the requests go: with one client, request i goes to `urls[i % n]`; with several,
   * every request of client c goes to `urls[c % n]` (a client steers its own turn).
   */
  urls: string[];
  headers?: Record<string, string>;
  body?: string;
  clients: number;
  /** Requests each client makes, one after another. */
  each: number;
}

export interface LoadResult {
  /** Every request's round trip, ms. */
  latencies: number[];
  /** Wall time of the whole block, ms. */
  ms: number;
  errors: number;
  firstError?: string;
}

// Sockets are kept between blocks, so a block never pays for connecting.
const agent = new Agent({ keepAlive: true, maxSockets: 1024, maxFreeSockets: 1024 });

function once(url: URL, method: string, headers: OutgoingHttpHeaders, body: Buffer | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers }, (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => status >= 300 && chunks.push(c));
      res.on('end', () => (status < 300 ? resolve() : reject(new Error(`${method} ${url.pathname}: ${status} ${Buffer.concat(chunks).toString().slice(0, 200)}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function run(spec: LoadSpec): Promise<LoadResult> {
  const urls = spec.urls.map((u) => new URL(u));
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
  const headers: OutgoingHttpHeaders = { ...spec.headers, ...(body ? { 'content-length': body.length } : {}) };
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: spec.clients }, async (_, c) => {
      for (let i = 0; i < spec.each; i++) {
        const url = spec.clients === 1 ? urls[i % urls.length] : urls[c % urls.length];
        const s = performance.now();
        await once(url, spec.method, headers, body).catch((err: Error) => {
          errors++;
          firstError ??= err.message;
        });
        latencies.push(performance.now() - s);
      }
    }),
  );
  return { latencies, ms: performance.now() - t0, errors, firstError };
}

process.on('message', (m: { id: number; spec: LoadSpec }) => {
  void run(m.spec).then((result) => process.send!({ id: m.id, result }));
});
// The bench went away: nothing more to do.
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });

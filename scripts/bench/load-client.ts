/**
 * The bench's HTTP load, as a process of its own (started and driven by load.ts over IPC).
 *
 * One client for every HTTP figure, floors and Steerline alike, so a ratio compares servers and
 * not clients. It is a minimal HTTP/1.1 keep-alive client on `net.Socket`: each URL's request is
 * built once as bytes and written as is, and an answer is read only as far as its status line and
 * its framing (`Content-Length`, or a chunked body walked chunk by chunk). `node:http` with a
 * keep-alive agent cost over half a core at the fastest floors (its IncomingMessage, streams and
 * agent bookkeeping per request), so its figures were the client's. Its own process, so its CPU is
 * neither the servers' nor the bench's; it reports, with every block, the CPU it spent on it
 * (`process.cpuUsage`, every thread, in µs: /proc's 10 ms ticks are most of a 1-client block of
 * 200 fast requests), to show it was not the bottleneck.
 */
import { connect, type Socket } from 'node:net';

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
  /** The client's CPU time over the block (user + system, `process.cpuUsage`: microseconds, where /proc counts 10 ms ticks), ms. */
  cpuMs: number;
  errors: number;
  firstError?: string;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;
const CHUNKED = /\r\ntransfer-encoding:[^\r]*chunked/i;

interface Pending {
  resolve: () => void;
  reject: (err: Error) => void;
  label: string;
}

/**
 * One keep-alive connection with at most one request in flight. The body is counted, not kept
 * (a big read's megabytes are never joined), except an error's first bytes for its message.
 */
class Connection {
  private readonly socket: Socket;
  private pending: Pending | undefined;
  // The head received so far, until its blank line.
  private head: Buffer | undefined;
  private status = 0;
  private inHead = true;
  // Content-Length framing: the body bytes still to come; chunked: the walk's state below.
  private left = 0;
  private chunked = false;
  private skip = 0;
  private sizeLine = '';
  private lastChunk = false;
  private errorBody = '';
  broken = false;

  constructor(
    readonly origin: string,
    host: string,
    port: number,
  ) {
    this.socket = connect({ host, port, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => this.read(chunk));
    this.socket.on('error', (err) => this.fail(err.message));
    this.socket.on('close', () => this.fail('connection closed'));
  }

  send(request: Buffer, label: string): Promise<void> {
    if (this.broken) return Promise.reject(new Error(`${label}: connection closed`));
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject, label };
      this.inHead = true;
      this.head = undefined;
      this.socket.write(request);
    });
  }

  close(): void {
    this.broken = true;
    this.socket.destroy();
  }

  private read(chunk: Buffer): void {
    let at = 0;
    if (this.inHead) {
      const buf = (this.head = this.head ? Buffer.concat([this.head, chunk]) : chunk);
      const end = buf.indexOf(HEAD_END);
      if (end < 0) return;
      const head = buf.toString('latin1', 0, end);
      // "HTTP/1.1 202 Accepted": the status is the three digits after the first space.
      this.status = Number(head.slice(9, 12));
      this.inHead = false;
      this.head = undefined;
      this.errorBody = '';
      const length = CONTENT_LENGTH.exec(head);
      this.chunked = !length && CHUNKED.test(head);
      if (!length && !this.chunked) return this.fail(`no Content-Length and not chunked: ${head.slice(0, 200)}`);
      this.left = length ? Number(length[1]) : 0;
      this.skip = 0;
      this.sizeLine = '';
      this.lastChunk = false;
      chunk = buf;
      at = end + 4;
    }
    if (this.status >= 300 && this.errorBody.length < 200) this.errorBody += chunk.toString('utf8', at, Math.min(chunk.length, at + 200));
    const done = this.chunked ? this.walkChunks(chunk, at) : (this.left -= chunk.length - at) <= 0;
    if (!done) return;
    const p = this.pending;
    this.pending = undefined;
    this.inHead = true;
    if (!p) return;
    if (this.status >= 200 && this.status < 300) p.resolve();
    else p.reject(new Error(`${p.label}: ${this.status} ${this.errorBody.slice(0, 200)}`));
  }

  /** Walks a chunked body as it comes; true once its last (empty) chunk and the CRLF after it are in. No trailers are expected. */
  private walkChunks(chunk: Buffer, at: number): boolean {
    while (at < chunk.length) {
      if (this.skip > 0) {
        const take = Math.min(this.skip, chunk.length - at);
        this.skip -= take;
        at += take;
        if (this.skip === 0 && this.lastChunk) return true;
        continue;
      }
      const nl = chunk.indexOf(10, at);
      if (nl < 0) {
        this.sizeLine += chunk.toString('latin1', at);
        return false;
      }
      // parseInt stops at the CR and at any ";extension".
      const size = parseInt(this.sizeLine + chunk.toString('latin1', at, nl), 16);
      this.sizeLine = '';
      at = nl + 1;
      if (!Number.isFinite(size)) {
        this.fail('a malformed chunk size');
        return false;
      }
      this.lastChunk = size === 0;
      this.skip = size + 2;
    }
    return false;
  }

  private fail(message: string): void {
    this.broken = true;
    const p = this.pending;
    this.pending = undefined;
    p?.reject(new Error(`${p.label}: ${message}`));
    this.socket.destroy();
  }
}

// Connections are kept between blocks, so a block never pays for connecting.
const idle = new Map<string, Connection[]>();

function take(url: URL): Connection {
  const free = idle.get(url.host);
  let c: Connection | undefined;
  while ((c = free?.pop()) && c.broken) c.close();
  return c ?? new Connection(url.host, url.hostname, Number(url.port || 80));
}

function giveBack(c: Connection): void {
  if (c.broken) return c.close();
  const free = idle.get(c.origin) ?? [];
  free.push(c);
  idle.set(c.origin, free);
}

/** A URL's whole request, headers and body, as the bytes written for each request. */
function requestBytes(url: URL, spec: LoadSpec, body: Buffer | undefined): Buffer {
  const lines = [`${spec.method} ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, 'Connection: keep-alive'];
  for (const [k, v] of Object.entries(spec.headers ?? {})) lines.push(`${k}: ${v}`);
  if (body) lines.push(`Content-Length: ${body.length}`);
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
  return body ? Buffer.concat([head, body]) : head;
}

async function run(spec: LoadSpec): Promise<LoadResult> {
  const urls = spec.urls.map((u) => new URL(u));
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
  const requests = urls.map((u) => requestBytes(u, spec, body));
  const labels = urls.map((u) => `${spec.method} ${u.pathname}`);
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: spec.clients }, async (_, c) => {
      const conns = new Map<string, Connection>();
      for (let i = 0; i < spec.each; i++) {
        const u = spec.clients === 1 ? i % urls.length : c % urls.length;
        const host = urls[u].host;
        let conn = conns.get(host);
        if (!conn || conn.broken) conns.set(host, (conn = take(urls[u])));
        const s = performance.now();
        await conn.send(requests[u], labels[u]).catch((err: Error) => {
          errors++;
          firstError ??= err.message;
        });
        latencies.push(performance.now() - s);
      }
      for (const conn of conns.values()) giveBack(conn);
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { latencies, ms, cpuMs: (cpu.user + cpu.system) / 1000, errors, firstError };
}

process.on('message', (m: { id: number; spec: LoadSpec }) => {
  void run(m.spec).then((result) => process.send!({ id: m.id, result }));
});
// The bench went away: nothing more to do.
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';

const PRISM = join(__dirname, '../../node_modules/@stoplight/prism-cli/dist/index.js');

/** What Prism said about one answer it relayed. */
export interface Relayed {
  method: string;
  path: string;
  status: number;
  headers: Headers;
  text: string;
  /** Prism's violations of the answer (and of the request, where it validates requests), empty when it matched. */
  violations: string[];
}

/**
 * Stoplight Prism's validation proxy (`prism proxy <document> <gateway> --errors`)
 * as a child process: every request goes through it to the gateway, and it checks
 * each answer (status, headers, body) against the OpenAPI document. With
 * `--errors` a mismatch is answered as Prism's own `VIOLATIONS` problem instead
 * of the gateway's answer, so a violation can never pass unseen.
 *
 * Request validation is off (`--validate-request false`) so that the gateway, not
 * Prism, answers the bad requests the session sends on purpose: their 400s are
 * checked against the document too.
 */
export class PrismProxy {
  readonly lines: string[] = [];
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly url: string,
  ) {}

  static async start(doc: object, upstream: string, timeoutMs = 30_000): Promise<PrismProxy> {
    const dir = mkdtempSync(join(tmpdir(), 'steerline-prism-'));
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const port = await freePort();
    const child = spawn(process.execPath, [PRISM, 'proxy', file, upstream, '--errors', '--validate-request', 'false', '--port', String(port), '--host', '127.0.0.1', '--cors', 'false'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const proxy = new PrismProxy(child, dir, `http://127.0.0.1:${port}`);
    for (const stream of [child.stdout!, child.stderr!]) readline.createInterface({ input: stream }).on('line', (line) => proxy.lines.push(line));
    const deadline = Date.now() + timeoutMs;
    while (!proxy.lines.some((l) => l.includes('Prism is listening'))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await proxy.close();
        throw new Error(`prism did not start:\n${proxy.lines.join('\n')}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return proxy;
  }

  /** One request through the proxy; the answer as the client got it, with Prism's verdict. */
  async send(method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; rawBody?: string } = {}): Promise<Relayed> {
    const body = init.rawBody ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
      body,
    });
    const text = await res.text();
    return { method, path, status: res.status, headers: res.headers, text, violations: violationsOf(res, text) };
  }

  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Prism's verdict on an answer: its `sl-violations` header, or its own VIOLATIONS problem body under `--errors`. */
function violationsOf(res: Response, text: string): string[] {
  const header = res.headers.get('sl-violations');
  if (header) return (JSON.parse(header) as { message: string; location?: string[] }[]).map((v) => `${(v.location ?? []).join('.')}: ${v.message}`);
  // Prism's own answers (a security or routing problem it found before forwarding) are problem documents of its own type.
  if (!(res.headers.get('content-type') ?? '').includes('application/problem+json')) return [];
  const problem = JSON.parse(text) as { type?: string; detail?: string };
  return problem.type?.includes('stoplight.io/prism') ? [`${problem.type}: ${problem.detail ?? ''}`] : [];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

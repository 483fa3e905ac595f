import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';

const ROOT = join(__dirname, '../..');

/** A service running as its own process from `dist/`, as production runs it. */
export class ServiceProcess {
  readonly lines: string[] = [];
  private readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * Exited, and every line it printed read ('exit' may come first). Only for a process
   * that started no children: one holding its output open would hold this too.
   */
  readonly finished: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly app: 'engine' | 'gateway' | 'persistence', env: Record<string, string>) {
    const entry = join(ROOT, `dist/apps/${app}/src/main.js`);
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` (npm test does)`);
    // Like `npm start`'s apps, it stops by itself when the test process dies without stopping it.
    const exitWithParent = join(ROOT, 'scripts/lib/exit-with-parent.cjs');
    // METRICS_PORT 0: a free port, so several engines or persistence instances of one test do not collide.
    this.child = spawn(process.execPath, ['--require', exitWithParent, entry], { env: { ...process.env, METRICS_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.finished = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      readline.createInterface({ input: stream }).on('line', (line) => this.lines.push(line));
    }
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Resolves with the parsed JSON log line that says the app is ready. */
  async ready(timeoutMs = 20_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      for (const line of this.lines) {
        if (line.includes(`${this.app} ready`)) return parseLine(line);
      }
      if (this.child.exitCode !== null) throw new Error(`${this.app} exited before it was ready:\n${this.lines.join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${this.app} was not ready within ${timeoutMs} ms:\n${this.lines.slice(-20).join('\n')}`);
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}

function parseLine(line: string): Record<string, unknown> {
  try {
    const record = JSON.parse(line) as Record<string, unknown>;
    return typeof record.message === 'object' && record.message ? { ...record, ...(record.message as object) } : record;
  } catch {
    return { line };
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

/** A nats-server of the test's own, so it can be stopped and restarted with its data. */
export class OwnNatsServer {
  private child?: ChildProcess;
  private readonly dir = mkdtempSync(join(tmpdir(), 'steerline-nats-'));

  private constructor(
    readonly port: number,
    private readonly maxPayload?: number,
  ) {}

  /** `maxPayload`: the server's max_payload in bytes (NATS's default, 1 MiB, when absent). */
  static async start(opts: { maxPayload?: number } = {}): Promise<OwnNatsServer> {
    const server = new OwnNatsServer(await freePort(), opts.maxPayload);
    await server.restart();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    const binary = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find(existsSync) ?? 'nats-server';
    const config = join(this.dir, 'nats.conf');
    // max_payload has no command-line flag: it goes in a config file.
    if (this.maxPayload !== undefined) writeFileSync(config, `max_payload: ${this.maxPayload}\n`);
    const args = ['-js', '-a', '127.0.0.1', '-p', String(this.port), '-sd', this.dir, ...(this.maxPayload !== undefined ? ['-c', config] : [])];
    this.child = spawn(binary, args, { stdio: 'ignore' });
    await waitForPort(this.port);
  }

  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on port ${port}`);
}

/**
 * A TCP proxy in front of a server: `cut()` drops every connection and refuses
 * new ones (an outage as the client sees it), `restore()` lets them through again.
 */
export class CuttableProxy {
  private readonly sockets = new Set<Socket>();
  private open = true;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<CuttableProxy> {
    let proxy!: CuttableProxy;
    const server = createServer((client) => {
      if (!proxy.open) return client.destroy();
      const upstream = connect(targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        proxy.sockets.add(s);
        s.once('close', () => proxy.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.once('close', () => upstream.destroy());
      upstream.once('close', () => client.destroy());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    proxy = new CuttableProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  cut(): void {
    this.open = false;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.open = true;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((r) => this.server.close(r));
  }
}

/** Three nats-server processes routed into one JetStream cluster on loopback. */
export class NatsCluster {
  private readonly nodes: { child?: ChildProcess; port: number; clusterPort: number; dir: string; name: string }[] = [];

  static async start(size = 3): Promise<NatsCluster> {
    const cluster = new NatsCluster();
    for (let i = 0; i < size; i++) {
      cluster.nodes.push({ port: await freePort(), clusterPort: await freePort(), dir: mkdtempSync(join(tmpdir(), `steerline-cluster-${i}-`)), name: `n${i + 1}` });
    }
    for (let i = 0; i < size; i++) cluster.startNode(i);
    await Promise.all(cluster.nodes.map((n) => waitForPort(n.port)));
    return cluster;
  }

  /** Every node's client URL, comma-separated, as NATS_URL takes them. */
  get url(): string {
    return this.nodes.map((n) => `nats://127.0.0.1:${n.port}`).join(',');
  }

  private startNode(i: number): void {
    const node = this.nodes[i];
    const routes = this.nodes.filter((_, j) => j !== i).map((n) => `nats://127.0.0.1:${n.clusterPort}`).join(',');
    const binary = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find(existsSync) ?? 'nats-server';
    node.child = spawn(
      binary,
      ['-js', '-a', '127.0.0.1', '-p', String(node.port), '-sd', node.dir, '-n', node.name, '--cluster_name', 'steerline-test', '--cluster', `nats://127.0.0.1:${node.clusterPort}`, '--routes', routes],
      { stdio: 'ignore' },
    );
  }

  async kill(i: number): Promise<void> {
    const child = this.nodes[i].child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async destroy(): Promise<void> {
    for (let i = 0; i < this.nodes.length; i++) await this.kill(i);
    for (const n of this.nodes) rmSync(n.dir, { recursive: true, force: true });
  }
}

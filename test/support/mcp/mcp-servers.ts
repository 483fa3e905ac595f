import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';
import { eventually } from '../env';

const HERE = __dirname;
export const STDIO_SERVER = join(HERE, 'stdio-server.mjs');
const HTTP_SERVER = join(HERE, 'http-server.mjs');

/** A scratch folder for one test file: the config file and the servers' event logs. */
export class McpScratch {
  readonly dir = mkdtempSync(join(tmpdir(), 'steerline-mcp-'));

  eventsFile(name: string): string {
    return join(this.dir, `${name}.jsonl`);
  }

  /** What a test server recorded so far (calls, cancellations, starts). */
  events(name: string): Record<string, any>[] {
    let text = '';
    try {
      text = readFileSync(this.eventsFile(name), 'utf8');
    } catch {
      return [];
    }
    return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }

  /** Waits until the server `name` recorded an event with these fields. */
  saw(name: string, fields: Record<string, unknown>, timeoutMs = 10_000): Promise<Record<string, any>> {
    const matches = (e: Record<string, unknown>) => Object.entries(fields).every(([k, v]) => JSON.stringify(e[k]) === JSON.stringify(v));
    return eventually(() => this.events(name).find(matches), timeoutMs, `MCP server ${name} to record ${JSON.stringify(fields)}`);
  }

  writeConfig(servers: Record<string, unknown>): string {
    const file = join(this.dir, 'mcp.json');
    writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
    return file;
  }

  /** A stdio server entry as a user would write it; its events go to `<name>.jsonl`. */
  stdioEntry(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { command: process.execPath, args: [STDIO_SERVER], env: { MCP_EVENTS: this.eventsFile(name) }, ...extra };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The test server over Streamable HTTP, as its own process; it wants `Authorization: Bearer test-token`. */
export class HttpMcpServer {
  private readonly child: ChildProcess;
  private readonly listening: Promise<void>;
  readonly exited: Promise<unknown>;

  constructor(
    readonly port: number,
    eventsFile: string,
  ) {
    this.child = spawn(process.execPath, [HTTP_SERVER, String(port)], { env: { ...process.env, MCP_EVENTS: eventsFile }, stdio: ['ignore', 'pipe', 'inherit'] });
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.listening = new Promise((resolve, reject) => {
      readline.createInterface({ input: this.child.stdout! }).on('line', (line) => line.startsWith('listening') && resolve());
      this.child.once('exit', (code) => reject(new Error(`the HTTP MCP server exited (${code}) before it listened`)));
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  ready(): Promise<void> {
    return this.listening;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
  }
}

import { Logger } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ToolError, type ToolProgressUpdate } from '../tool.registry';
import type { McpServerConfig } from './mcp.config';
import { outputOf, type McpCallResult } from './mcp.result';

/** A tool as its server lists it. */
export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  idempotent: boolean;
  /** An urgent steer waits for its calls: `destructiveHint: true`, or an `interruptible: false` annotation (docs/design.md §6.4). */
  interruptible: boolean;
}

export interface McpConnectionOptions {
  /** Called when the server's tool list changed (listed again, or the server came or went). */
  onToolsChanged: () => void;
  /** How long connecting and listing may take before the attempt counts as failed. */
  connectTimeoutMs: number;
  /** Backoff between attempts: from `retryMinMs`, doubling, at most `retryMaxMs`. */
  retryMinMs: number;
  retryMaxMs: number;
}

/**
 * One MCP server, kept connected: connected at start, reconnected with backoff
 * whenever it cannot be reached or goes away (a stdio server is started again,
 * an HTTP one reconnected), tools listed again on `notifications/tools/list_changed`.
 * While it is away its tools stay listed and a call gets `mcp_server_unavailable`,
 * which the model sees; a server that never answered offers nothing.
 */
export class McpServerConnection {
  private readonly logger: Logger;
  private client?: Client;
  private attempt = 0;
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;
  private connecting?: Promise<void>;
  tools: McpToolInfo[] = [];

  constructor(
    readonly config: McpServerConfig,
    private readonly options: McpConnectionOptions,
  ) {
    this.logger = new Logger(`McpServer ${config.name}`);
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  /** The first attempt; a failure is logged and retried in the background, never thrown. */
  start(): Promise<void> {
    return this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  /**
   * Calls a tool. The SDK sends `notifications/cancelled` to the server when
   * `signal` aborts (turn cancelled) or the timeout passes.
   */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number, onProgress?: (update: ToolProgressUpdate) => void, retried = false): Promise<unknown> {
    const client = this.client;
    if (!client) throw new ToolError('mcp_server_unavailable', `MCP server ${this.config.name} is not connected; it is being reconnected`);
    // Asking for progress (a progress token) only when someone listens for it.
    const onprogress = onProgress && ((p: { progress: number; total?: number; message?: string }) => onProgress(progressUpdate(p)));
    let result: McpCallResult;
    try {
      result = (await client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout: timeoutMs, ...(onprogress ? { onprogress } : {}) })) as McpCallResult;
    } catch (err) {
      if (signal.aborted) throw err;
      // An HTTP server that restarted does not know our session (404): it did not run the call, so a new session may.
      if (!retried && err instanceof StreamableHTTPError && err.code === 404) {
        await this.renew(client);
        return this.call(tool, args, signal, timeoutMs, onProgress, true);
      }
      throw this.callError(err, client, tool, timeoutMs);
    }
    return outputOf(result);
  }

  private callError(err: unknown, client: Client, tool: string, timeoutMs: number): ToolError {
    if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
      return new ToolError('tool_timeout', `MCP tool ${tool} of ${this.config.name} did not answer within ${timeoutMs} ms`);
    }
    // A JSON-RPC error the server answered with (unknown tool, bad arguments …): the connection is fine.
    if (err instanceof McpError && err.code !== ErrorCode.ConnectionClosed) return new ToolError('mcp_error', `MCP server ${this.config.name}: ${err.message}`);
    // The process died, the HTTP server went away or forgot our session: start over.
    this.lost(client, (err as Error)?.message ?? String(err));
    return new ToolError('mcp_server_lost', `MCP server ${this.config.name} was lost during the call: ${(err as Error)?.message ?? String(err)}`);
  }

  private connect(): Promise<void> {
    this.connecting = this.attemptConnect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /** Replaces a client whose session is gone, now rather than after a backoff; concurrent callers share one reconnect. */
  private async renew(stale: Client): Promise<void> {
    if (this.client === stale) {
      this.client = undefined;
      stale.onclose = undefined;
      void stale.close().catch(() => undefined);
    }
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    await (this.connecting ?? (this.client ? undefined : this.connect()));
  }

  private async attemptConnect(): Promise<void> {
    // A retry timer that fires after a renewal already reconnected has nothing to do.
    if (this.stopped || this.client) return;
    const client = new Client({ name: 'steerline-engine', version: '1.0.0' }, { capabilities: {} });
    client.onclose = () => this.lost(client, 'the connection closed');
    client.onerror = (err) => this.logger.debug({ message: 'MCP transport error', server: this.config.name, error: err.message });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void this.listTools(client));
    try {
      await client.connect(this.transport(), { timeout: this.options.connectTimeoutMs });
      this.client = client;
      await this.listTools(client, true);
      this.attempt = 0;
      this.logger.log({ message: 'MCP server connected', server: this.config.name, tools: this.tools.map((t) => t.name) });
    } catch (err) {
      if (this.client === client) this.client = undefined;
      client.onclose = undefined;
      await client.close().catch(() => undefined);
      this.scheduleRetry((err as Error)?.message ?? String(err));
    }
  }

  private transport(): Transport {
    const c = this.config;
    if (c.transport === 'http') return new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: c.headers } });
    const transport = new StdioClientTransport({ command: c.command, args: c.args, env: c.env, cwd: c.cwd, stderr: 'pipe' });
    // The server's stderr is its log, not ours: kept, at debug level, with its name.
    transport.stderr?.on('data', (chunk: Buffer) => this.logger.debug({ message: 'MCP server stderr', server: c.name, text: chunk.toString('utf8').trimEnd() }));
    return transport;
  }

  private async listTools(client: Client, throwOnError = false): Promise<void> {
    try {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.options.connectTimeoutMs });
        for (const t of page.tools) {
          tools.push({
            name: t.name,
            description: t.description ?? t.title ?? '',
            inputSchema: t.inputSchema as Record<string, unknown>,
            idempotent: t.annotations?.idempotentHint === true,
            interruptible: t.annotations?.destructiveHint !== true && (t.annotations as { interruptible?: unknown } | undefined)?.interruptible !== false,
          });
        }
        cursor = page.nextCursor;
      } while (cursor);
      if (this.client !== client) return;
      this.tools = tools;
      this.options.onToolsChanged();
    } catch (err) {
      if (throwOnError) throw err;
      this.logger.warn({ message: 'MCP tools could not be listed again; the previous list stays', server: this.config.name, error: (err as Error).message });
    }
  }

  /** The connection is gone: forget the client (its tools stay listed) and reconnect. */
  private lost(client: Client, reason: string): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    client.onclose = undefined;
    void client.close().catch(() => undefined);
    this.scheduleRetry(reason);
  }

  private scheduleRetry(reason: string): void {
    if (this.stopped || this.retryTimer) return;
    const base = Math.min(this.options.retryMaxMs, this.options.retryMinMs * 2 ** this.attempt);
    const delay = Math.round(base / 2 + (Math.random() * base) / 2);
    this.attempt += 1;
    this.logger.warn({ message: 'MCP server unreachable; retrying', server: this.config.name, error: reason, retryInMs: delay, attempt: this.attempt });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }
}

/** MCP progress (a count, maybe of a total) as a fraction when the total is known. */
export function progressUpdate(p: { progress: number; total?: number; message?: string }): ToolProgressUpdate {
  const fraction = p.total && p.total > 0 ? Math.min(1, Math.max(0, p.progress / p.total)) : undefined;
  return { ...(fraction !== undefined ? { progress: fraction } : {}), ...(p.message ? { message: p.message } : {}) };
}

import { Logger } from '@nestjs/common';
import { TOOL_NAME } from '@steerline/contracts';
import type { Tool, ToolSource } from '../tool.registry';
import { sanitizeName, type McpServerConfig } from './mcp.config';
import { McpServerConnection } from './mcp-server.connection';

export interface McpToolOptions {
  /** How long one call waits for its result. */
  callTimeoutMs: number;
  /** How long the engine's start waits for the servers' first connection, in all. */
  startWaitMs?: number;
  connectTimeoutMs?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
}

interface Offered {
  tool: Tool;
  server: McpServerConnection;
}

/**
 * The tools of every configured MCP server, offered as `mcp__<server>__<tool>`
 * (names made fit for the providers' function names; two tools that would get
 * one name are refused with a log line, the first keeps it). A server's
 * `tenants` list limits which tenants' turns see its tools.
 */
export class McpToolSource implements ToolSource {
  private readonly logger = new Logger('McpTools');
  private readonly servers: McpServerConnection[];
  private offered = new Map<string, Offered>();
  private refused = new Set<string>();

  constructor(
    configs: McpServerConfig[],
    private readonly options: McpToolOptions,
  ) {
    this.servers = configs.map(
      (config) =>
        new McpServerConnection(config, {
          onToolsChanged: () => this.rebuild(),
          connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
          retryMinMs: options.retryMinMs ?? 500,
          retryMaxMs: options.retryMaxMs ?? 30_000,
        }),
    );
  }

  /**
   * Connects every server, waiting at most `startWaitMs` so a turn started
   * right after "engine ready" sees the tools of the servers that answer; the
   * others keep being retried in the background.
   */
  async start(): Promise<void> {
    const first = Promise.all(this.servers.map((s) => s.start()));
    let timer: NodeJS.Timeout | undefined;
    const cap = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.startWaitMs ?? 10_000)));
    await Promise.race([first, cap]);
    clearTimeout(timer);
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }

  list(tenantId?: string): Tool[] {
    return [...this.offered.values()].filter((o) => allowed(o.server.config, tenantId)).map((o) => o.tool);
  }

  get(name: string, tenantId?: string): Tool | undefined {
    const o = this.offered.get(name);
    return o && allowed(o.server.config, tenantId) ? o.tool : undefined;
  }

  private rebuild(): void {
    const next = new Map<string, Offered>();
    const refused = new Set<string>();
    for (const server of this.servers) {
      for (const info of server.tools) {
        const name = `mcp__${server.config.toolPrefix}__${sanitizeName(info.name)}`.slice(0, 64);
        const taken = next.get(name);
        if (taken || !TOOL_NAME.test(name)) {
          const key = `${server.config.name}/${info.name}`;
          refused.add(key);
          if (!this.refused.has(key)) {
            this.logger.warn({ message: 'MCP tool refused: its name is taken or unusable', server: server.config.name, tool: info.name, name, takenBy: taken?.server.config.name });
          }
          continue;
        }
        const remoteName = info.name;
        next.set(name, {
          server,
          tool: {
            spec: { name, description: info.description, parameters: info.inputSchema },
            idempotent: info.idempotent,
            source: `mcp:${server.config.name}`,
            interruptible: info.interruptible,
            run: (args, signal, call) => server.call(remoteName, args, signal, this.options.callTimeoutMs, call?.progress),
          },
        });
      }
    }
    this.offered = next;
    this.refused = refused;
  }
}

function allowed(config: McpServerConfig, tenantId: string | undefined): boolean {
  return !config.tenants || (tenantId !== undefined && config.tenants.includes(tenantId));
}

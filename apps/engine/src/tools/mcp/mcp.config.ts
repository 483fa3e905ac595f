import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/**
 * The `STEERLINE_MCP_CONFIG` file: the `mcpServers` shape every major agent
 * reads (Claude Code, Cursor, VS Code …), so one file serves them all.
 *
 *   {"mcpServers": {"<name>": {"command", "args"?, "env"?, "cwd"?, "tenants"?}
 *                           | {"url", "headers"?, "tenants"?}}}
 *
 * Fields other agents add (`type`, `disabled`, …) are tolerated: `type` must
 * agree with the entry, a `disabled: true` server is skipped.
 */
export type McpServerConfig = McpStdioServer | McpHttpServer;

interface McpServerCommon {
  /** The name in the file; tools are offered as `mcp__<toolPrefix>__<tool>`. */
  name: string;
  /** The name made fit for a function name (letters, digits, `_`, `-`). */
  toolPrefix: string;
  /** Tenants whose turns may use this server; undefined: every tenant. */
  tenants?: string[];
}

export interface McpStdioServer extends McpServerCommon {
  transport: 'stdio';
  command: string;
  args: string[];
  /** The only variables the server gets besides the SDK's minimal set (HOME, LOGNAME, PATH, SHELL, TERM, USER). */
  env: Record<string, string>;
  cwd?: string;
}

export interface McpHttpServer extends McpServerCommon {
  transport: 'http';
  url: string;
  headers: Record<string, string>;
}

/** The file could not be used; the engine does not start. */
export class McpConfigError extends Error {
  constructor(file: string, problem: string) {
    super(`STEERLINE_MCP_CONFIG ${file}: ${problem}`);
    this.name = 'McpConfigError';
  }
}

const tenants = z.array(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a tenant id (letters, digits, _ and -)')).optional();
const strings = z.record(z.string(), z.string());

const StdioEntry = z.looseObject({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: strings.default({}),
  cwd: z.string().min(1).optional(),
  tenants,
});
const HttpEntry = z.looseObject({
  type: z.enum(['http', 'streamable-http', 'streamableHttp']).optional(),
  url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }),
  headers: strings.default({}),
  tenants,
});
const FileSchema = z.object({ mcpServers: z.record(z.string(), z.unknown()) });

/** A name made fit for a provider's function name: other characters become `_`. */
export function sanitizeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** Reads and checks the file; throws `McpConfigError` with one line naming the problem. */
export function loadMcpConfig(file: string): McpServerConfig[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new McpConfigError(file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new McpConfigError(file, `is not JSON (${(err as Error).message})`);
  }
  const parsed = FileSchema.safeParse(json);
  if (!parsed.success) throw new McpConfigError(file, 'must be an object with "mcpServers": {"<name>": {...}}');
  return parseServers(file, parsed.data.mcpServers, path.dirname(path.resolve(file)));
}

function parseServers(file: string, entries: Record<string, unknown>, baseDir: string): McpServerConfig[] {
  const servers: McpServerConfig[] = [];
  const byPrefix = new Map<string, string>();
  for (const [name, raw] of Object.entries(entries)) {
    if (typeof raw === 'object' && raw !== null && (raw as { disabled?: unknown }).disabled === true) continue;
    const toolPrefix = sanitizeName(name);
    if (!name || toolPrefix.length > 32) throw new McpConfigError(file, `server name ${JSON.stringify(name)} must have 1 to 32 characters`);
    const clash = byPrefix.get(toolPrefix);
    if (clash !== undefined) throw new McpConfigError(file, `servers ${JSON.stringify(clash)} and ${JSON.stringify(name)} would both offer tools as mcp__${toolPrefix}__…`);
    byPrefix.set(toolPrefix, name);
    servers.push(parseEntry(file, name, toolPrefix, raw, baseDir));
  }
  return servers;
}

function parseEntry(file: string, name: string, toolPrefix: string, raw: unknown, baseDir: string): McpServerConfig {
  const isObject = typeof raw === 'object' && raw !== null && !Array.isArray(raw);
  const hasCommand = isObject && 'command' in raw;
  const hasUrl = isObject && 'url' in raw;
  if (!isObject || hasCommand === hasUrl) throw new McpConfigError(file, `server ${JSON.stringify(name)} needs either "command" (stdio) or "url" (Streamable HTTP)`);
  const fail = (error: z.ZodError): never => {
    const issue = error.issues[0];
    throw new McpConfigError(file, `server ${JSON.stringify(name)}: ${issue.path.join('.') || 'entry'}: ${issue.message}`);
  };
  const common = (t: string[] | undefined) => ({ name, toolPrefix, ...(t ? { tenants: t } : {}) });
  if (hasCommand) {
    const parsed = StdioEntry.safeParse(raw);
    if (!parsed.success) return fail(parsed.error);
    const e = parsed.data;
    // A relative cwd is read against the file's folder, as a relative path in the file reads best.
    return { ...common(e.tenants), transport: 'stdio', command: e.command, args: e.args, env: e.env, ...(e.cwd ? { cwd: path.resolve(baseDir, e.cwd) } : {}) };
  }
  const parsed = HttpEntry.safeParse(raw);
  if (!parsed.success) return fail(parsed.error);
  const e = parsed.data;
  return { ...common(e.tenants), transport: 'http', url: e.url, headers: e.headers };
}

import { hostname } from 'node:os';
import { z } from 'zod';
import { DEFAULT_PREFIX, MAX_OUTPUT_BYTES_DEFAULT, uuidv7 } from '@steerline/contracts';
import { METRICS_PORTS, metricsEnv, metricsListen, type MetricsListen } from '@steerline/runtime';
import type { AnthropicConfig } from './models/anthropic/anthropic.model';
import type { OpenAIConfig } from './models/openai/openai.model';
import type { RemoteToolOptions } from './tools/remote/remote-tool.directory';
import { loadMcpConfig, type McpServerConfig } from './tools/mcp/mcp.config';
import type { McpToolOptions } from './tools/mcp/mcp-tool.source';

/** An empty variable counts as unset, as in most shells' `VAR= cmd`. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());
const millis = (min: number, fallback: number) => z.coerce.number().int().min(min).max(3_600_000).default(fallback);

const EngineEnv = z.object({
  NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222'),
  STEERLINE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only').default(DEFAULT_PREFIX),
  STEERLINE_ENGINE_ID: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only').optional(),
  /** Comma-separated names of the built-in tools to offer; unset: all, empty: none. */
  STEERLINE_BUILTIN_TOOLS: z.string().optional(),
  STEERLINE_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** How long an engine's lease on its turns lasts without a heartbeat; its turns are settled after. */
  STEERLINE_ENGINE_LEASE_MS: z.coerce.number().int().min(500).max(600_000).default(5000),
  /** How many times a turn may move to another engine (crash or graceful stop) before it fails `engine_lost`. */
  STEERLINE_RESUME_LIMIT: z.coerce.number().int().min(0).max(100).default(3),
  /** The `openai` provider: enabled when either is set. Server configuration only, never from a request. */
  OPENAI_BASE_URL: optional(z.url({ protocol: /^https?$/ })),
  OPENAI_API_KEY: optional(z.string()),
  OPENAI_TIMEOUT_MS: millis(100, 120_000),
  OPENAI_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /** The `anthropic` provider: enabled when either is set, like openai's. */
  ANTHROPIC_BASE_URL: optional(z.url({ protocol: /^https?$/ })),
  ANTHROPIC_API_KEY: optional(z.string()),
  ANTHROPIC_TIMEOUT_MS: millis(100, 120_000),
  ANTHROPIC_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  ANTHROPIC_MAX_TOKENS: z.coerce.number().int().min(1).max(128_000).default(4096),
  /** How long a remote tool call waits for its answer, unless the tool's description says otherwise. */
  STEERLINE_TOOL_TIMEOUT_MS: millis(100, 60_000),
  /** How often the engine asks tool services to describe themselves (services also announce themselves at start). */
  STEERLINE_TOOL_DISCOVERY_MS: millis(1000, 30_000),
  /** A JSON file in the common `mcpServers` shape: the MCP servers whose tools turns are offered. */
  STEERLINE_MCP_CONFIG: optional(z.string()),
  /** Bound on one tool output or model answer, in UTF-8 bytes; more is cut with a visible marker. */
  STEERLINE_MAX_OUTPUT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(MAX_OUTPUT_BYTES_DEFAULT),
  ...metricsEnv(METRICS_PORTS.engine),
});

export interface EngineConfig {
  natsUrl: string;
  prefix: string;
  engineId: string;
  builtinTools?: string[];
  streamReplicas: number;
  leaseMs: number;
  resumeLimit: number;
  /** Absent: the `openai` provider is not offered. */
  openai?: OpenAIConfig;
  /** Absent: the `anthropic` provider is not offered. */
  anthropic?: AnthropicConfig;
  /** Absent: the defaults. */
  remoteTools?: RemoteToolOptions;
  /** MCP servers (STEERLINE_MCP_CONFIG); absent: none. */
  mcp?: { servers: McpServerConfig[] } & Partial<McpToolOptions>;
  /** Bound on one tool output or model answer (UTF-8 bytes); never more than NATS's max_payload allows. Absent: the default. */
  maxOutputBytes?: number;
  /** Where main.ts serves `/metrics` (METRICS_PORT, METRICS_HOST); absent: nowhere. */
  metrics?: MetricsListen;
}

/** Reads the engine's configuration; a bad variable stops start-up with its name. */
export function loadEngineConfig(env: NodeJS.ProcessEnv): EngineConfig {
  const parsed = EngineEnv.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid engine configuration: ${String(issue.path[0])}: ${issue.message}`);
  }
  const e = parsed.data;
  let mcpServers: McpServerConfig[] | undefined;
  try {
    mcpServers = e.STEERLINE_MCP_CONFIG === undefined ? undefined : loadMcpConfig(e.STEERLINE_MCP_CONFIG);
  } catch (err) {
    throw new Error(`invalid engine configuration: ${(err as Error).message}`);
  }
  return {
    natsUrl: e.NATS_URL,
    prefix: e.STEERLINE_PREFIX,
    engineId: e.STEERLINE_ENGINE_ID ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '-')}-${process.pid}-${uuidv7().slice(-6)}`,
    builtinTools: e.STEERLINE_BUILTIN_TOOLS === undefined ? undefined : e.STEERLINE_BUILTIN_TOOLS.split(',').map((s) => s.trim()).filter(Boolean),
    streamReplicas: e.STEERLINE_STREAM_REPLICAS,
    leaseMs: e.STEERLINE_ENGINE_LEASE_MS,
    resumeLimit: e.STEERLINE_RESUME_LIMIT,
    ...(e.OPENAI_BASE_URL !== undefined || e.OPENAI_API_KEY !== undefined
      ? { openai: { baseUrl: e.OPENAI_BASE_URL, apiKey: e.OPENAI_API_KEY, timeoutMs: e.OPENAI_TIMEOUT_MS, maxRetries: e.OPENAI_MAX_RETRIES } }
      : {}),
    ...(e.ANTHROPIC_BASE_URL !== undefined || e.ANTHROPIC_API_KEY !== undefined
      ? {
          anthropic: {
            baseUrl: e.ANTHROPIC_BASE_URL,
            apiKey: e.ANTHROPIC_API_KEY,
            timeoutMs: e.ANTHROPIC_TIMEOUT_MS,
            maxRetries: e.ANTHROPIC_MAX_RETRIES,
            maxTokens: e.ANTHROPIC_MAX_TOKENS,
          },
        }
      : {}),
    remoteTools: { callTimeoutMs: e.STEERLINE_TOOL_TIMEOUT_MS, discoveryIntervalMs: e.STEERLINE_TOOL_DISCOVERY_MS },
    ...(mcpServers ? { mcp: { servers: mcpServers, callTimeoutMs: e.STEERLINE_TOOL_TIMEOUT_MS } } : {}),
    maxOutputBytes: e.STEERLINE_MAX_OUTPUT_BYTES,
    metrics: metricsListen(e),
  };
}

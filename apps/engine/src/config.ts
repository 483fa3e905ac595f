import { hostname } from 'node:os';
import { z } from 'zod';
import { AgentRefSchema, DEFAULT_PREFIX, MAX_SUBJECT_PARTITIONS, MAX_OUTPUT_BYTES_DEFAULT, ModelSpecSchema, RUNNER_LEASE_MS, uuidv7, type ModelSpec } from '@steerline/contracts';
import { METRICS_PORTS, metricsEnv, metricsListen, type MetricsListen } from '@steerline/runtime';
import type { AnthropicConfig } from './models/anthropic/anthropic.model';
import { offeredProviders, providerOff } from './models/model.registry';
import type { OpenAIConfig } from './models/openai/openai.model';
import { loadModelEndpoints, MAX_TOKENS_PARAMS, type NamedEndpoint } from './models/model.endpoints';
import { BUILTIN_TOOLS } from './tools/tool.registry';
import type { RemoteToolOptions } from './tools/remote/remote-tool.directory';
import { loadMcpConfig, type McpServerConfig } from './tools/mcp/mcp.config';
import type { McpToolOptions } from './tools/mcp/mcp-tool.source';

/** An empty variable counts as unset, as in most shells' `VAR= cmd`. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());
const millis = (min: number, fallback: number) => z.coerce.number().int().min(min).max(3_600_000).default(fallback);
const onOff = (fallback: 'on' | 'off') => optional(z.enum(['on', 'off'], { error: 'on or off' })).transform((v) => (v ?? fallback) === 'on');

const EngineEnv = z.object({
  NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222'),
  STEERLINE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only').default(DEFAULT_PREFIX),
  STEERLINE_ENGINE_ID: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only').optional(),
  /** Comma-separated names of the built-in tools to offer; unset: all, empty: none. */
  STEERLINE_BUILTIN_TOOLS: z.string().optional(),
  /** The test-only parts (docs/design.md §7): on for `npm start` and the tests, off in deploy/. */
  STEERLINE_SCRIPTED_MODEL: onOff('on'),
  STEERLINE_FAIL_TOOL: onOff('on'),
  /** What a turn that names no model or agent runs: a model (JSON) or an agent (`reviewer`, `reviewer@3`); unset: such a turn is refused. */
  STEERLINE_DEFAULT_MODEL: optional(z.string()),
  STEERLINE_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** How many partition tokens the event subjects this engine writes carry (docs/design.md §15, "Partitioned projection"); 1: none. */
  STEERLINE_SUBJECT_PARTITIONS: z.coerce.number().int().min(1).max(MAX_SUBJECT_PARTITIONS).default(1),
  /** How long an engine's lease on its turns lasts without a heartbeat; its turns are settled after. */
  STEERLINE_ENGINE_LEASE_MS: z.coerce.number().int().min(500).max(600_000).default(5000),
  /** How many times a turn may move to another engine (crash or graceful stop) before it fails `engine_lost`. */
  STEERLINE_RESUME_LIMIT: z.coerce.number().int().min(0).max(100).default(3),
  /** How long an external turn's runner lease lasts without a renewal; the turn fails `runner_lost` after. */
  STEERLINE_RUNNER_LEASE_MS: z.coerce.number().int().min(RUNNER_LEASE_MS.min).max(RUNNER_LEASE_MS.max).default(RUNNER_LEASE_MS.default),
  /** The `openai` provider: enabled when either is set. Server configuration only, never from a request. */
  OPENAI_BASE_URL: optional(z.url({ protocol: /^https?$/ })),
  OPENAI_API_KEY: optional(z.string()),
  OPENAI_TIMEOUT_MS: millis(100, 120_000),
  OPENAI_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /** Where a turn's maxOutputTokens goes on the default openai endpoint. */
  OPENAI_MAX_TOKENS_PARAM: optional(z.enum(MAX_TOKENS_PARAMS)),
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
  /** A JSON file of named model endpoints (models/model.endpoints.ts); a turn picks one by `model.endpoint`. */
  STEERLINE_MODELS: optional(z.string()),
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
  /** The built-in tools to offer; absent: all. */
  builtinTools?: string[];
  /** false: the `scripted` provider is not offered (STEERLINE_SCRIPTED_MODEL=off); absent: it is. */
  scriptedModel?: boolean;
  /** What a turn that names no model runs with (STEERLINE_DEFAULT_MODEL as JSON); absent: such a turn is refused, or runs `defaultAgent`. */
  defaultModel?: ModelSpec;
  /** The agent a turn that names neither model nor agent runs (STEERLINE_DEFAULT_MODEL as `reviewer` or `reviewer@3`), in the turn's tenant. */
  defaultAgent?: string;
  streamReplicas: number;
  /** STEERLINE_SUBJECT_PARTITIONS; absent: 1 (subjects without a partition token). */
  subjectPartitions?: number;
  leaseMs: number;
  resumeLimit: number;
  /** An external turn's runner lease (STEERLINE_RUNNER_LEASE_MS); absent: the default. */
  runnerLeaseMs?: number;
  /** Absent: the `openai` provider is not offered. */
  openai?: OpenAIConfig;
  /** Absent: the `anthropic` provider is not offered. */
  anthropic?: AnthropicConfig;
  /** The named endpoints of STEERLINE_MODELS; absent: only the `default` ones above. */
  endpoints?: NamedEndpoint[];
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
  const fail = (variable: string, message: string): never => {
    throw new Error(`invalid engine configuration: ${variable}: ${message}`);
  };
  let mcpServers: McpServerConfig[] | undefined;
  let endpoints: NamedEndpoint[] | undefined;
  try {
    mcpServers = e.STEERLINE_MCP_CONFIG === undefined ? undefined : loadMcpConfig(e.STEERLINE_MCP_CONFIG);
    endpoints = e.STEERLINE_MODELS === undefined ? undefined : loadModelEndpoints(e.STEERLINE_MODELS, env);
  } catch (err) {
    throw new Error(`invalid engine configuration: ${(err as Error).message}`);
  }
  const config: EngineConfig = {
    natsUrl: e.NATS_URL,
    prefix: e.STEERLINE_PREFIX,
    engineId: e.STEERLINE_ENGINE_ID ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '-')}-${process.pid}-${uuidv7().slice(-6)}`,
    builtinTools: builtinTools(e.STEERLINE_BUILTIN_TOOLS, e.STEERLINE_FAIL_TOOL, fail),
    scriptedModel: e.STEERLINE_SCRIPTED_MODEL,
    streamReplicas: e.STEERLINE_STREAM_REPLICAS,
    subjectPartitions: e.STEERLINE_SUBJECT_PARTITIONS,
    leaseMs: e.STEERLINE_ENGINE_LEASE_MS,
    resumeLimit: e.STEERLINE_RESUME_LIMIT,
    runnerLeaseMs: e.STEERLINE_RUNNER_LEASE_MS,
    ...(e.OPENAI_BASE_URL !== undefined || e.OPENAI_API_KEY !== undefined
      ? {
          openai: {
            baseUrl: e.OPENAI_BASE_URL,
            apiKey: e.OPENAI_API_KEY,
            timeoutMs: e.OPENAI_TIMEOUT_MS,
            maxRetries: e.OPENAI_MAX_RETRIES,
            ...(e.OPENAI_MAX_TOKENS_PARAM && { maxTokensParam: e.OPENAI_MAX_TOKENS_PARAM }),
          },
        }
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
    ...(endpoints && { endpoints }),
    remoteTools: { callTimeoutMs: e.STEERLINE_TOOL_TIMEOUT_MS, discoveryIntervalMs: e.STEERLINE_TOOL_DISCOVERY_MS },
    ...(mcpServers ? { mcp: { servers: mcpServers, callTimeoutMs: e.STEERLINE_TOOL_TIMEOUT_MS } } : {}),
    maxOutputBytes: e.STEERLINE_MAX_OUTPUT_BYTES,
    metrics: metricsListen(e),
  };
  if (e.STEERLINE_DEFAULT_MODEL !== undefined) {
    let parsed: DefaultModel;
    try {
      parsed = parseDefaultModel(e.STEERLINE_DEFAULT_MODEL);
    } catch (err) {
      return fail('STEERLINE_DEFAULT_MODEL', (err as Error).message);
    }
    // An agent is a tenant's, so it is read per turn, in the turn's tenant; its provider is checked then too.
    if ('agent' in parsed) config.defaultAgent = parsed.agent;
    else if (!offeredProviders(config).includes(parsed.model.provider)) fail('STEERLINE_DEFAULT_MODEL', providerOff(parsed.model.provider));
    else config.defaultModel = parsed.model;
  }
  return config;
}

/** STEERLINE_DEFAULT_MODEL read: a model, or a stored agent's reference. */
export type DefaultModel = { model: ModelSpec } | { agent: string };

/**
 * STEERLINE_DEFAULT_MODEL's value: an agent as a turn names it (`reviewer`, its
 * latest version, or `reviewer@3`), else a model as a turn names it, in JSON,
 * e.g. `{"provider":"openai","name":"gpt-4o-mini"}`. A JSON model starts with
 * `{`, which no agent name has, so the two never overlap. Throws what is wrong
 * with it, in a few words, for the one start-up error line.
 */
export function parseDefaultModel(text: string): DefaultModel {
  if (AgentRefSchema.safeParse(text).success) return { agent: text };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error('not JSON, nor an agent name; give a model as a turn names it, e.g. {"provider":"openai","name":"gpt-4o-mini"}, or an agent, e.g. reviewer or reviewer@3');
  }
  const parsed = ModelSpecSchema.safeParse(json);
  if (parsed.success) return { model: parsed.data };
  const issue = parsed.error.issues[0];
  throw new Error(`not a model: ${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`);
}

const BUILTIN_NAMES = BUILTIN_TOOLS.map((t) => t.spec.name);

/** The built-ins to offer: those listed (unset: all), without `fail` when STEERLINE_FAIL_TOOL=off. */
function builtinTools(listed: string | undefined, failTool: boolean, fail: (variable: string, message: string) => never): string[] {
  const names = listed === undefined ? BUILTIN_NAMES : listed.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = names.find((name) => !BUILTIN_NAMES.includes(name));
  if (unknown) fail('STEERLINE_BUILTIN_TOOLS', `${unknown} is not a built-in tool (${BUILTIN_NAMES.join(', ')})`);
  if (failTool) return names;
  if (listed !== undefined && names.includes('fail')) fail('STEERLINE_BUILTIN_TOOLS', 'lists fail, which STEERLINE_FAIL_TOOL=off turns off');
  return names.filter((name) => name !== 'fail');
}

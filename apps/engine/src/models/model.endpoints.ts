import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { DEFAULT_ENDPOINT, ENDPOINT_NAME } from '@steerline/contracts';
import type { EndpointConfig } from './model.failures';

/**
 * Named model endpoints (`STEERLINE_MODELS`, docs/design.md §6.1, "Named endpoints"): one engine
 * reaches any number of OpenAI-compatible and Anthropic endpoints, and a
 * turn picks one by `model.endpoint`.
 *
 *   {"endpoints": {"<name>": {"provider": "openai" | "anthropic", "baseURL", "apiKeyEnv",
 *                             "headers"?, "timeoutMs"?, "maxRetries"?, "tenants"?,
 *                             "maxTokensParam"? (openai), "maxTokens"? (anthropic)}}}
 *
 * The key is read from the variable `apiKeyEnv` names, once, at start: a file
 * holds no secret, and no request ever carries one. `default` is the name of
 * the OPENAI_* / ANTHROPIC_* variables' endpoints, so a file may not use it.
 */
export interface NamedEndpoint {
  name: string;
  provider: 'openai' | 'anthropic';
  config: EndpointConfig & { maxTokensParam?: MaxTokensParam; maxTokens?: number };
  /** Tenants whose turns may use it; undefined: every tenant. */
  tenants?: string[];
}

/** Which field carries the output bound on an OpenAI-compatible endpoint (OpenAI's o-series and GPT-5 take only `max_completion_tokens`). */
export type MaxTokensParam = 'max_tokens' | 'max_completion_tokens';
export const MAX_TOKENS_PARAMS = ['max_tokens', 'max_completion_tokens'] as const;

/** The file could not be used; the engine does not start. */
export class ModelEndpointsError extends Error {
  constructor(file: string, problem: string) {
    super(`STEERLINE_MODELS ${file}: ${problem}`);
    this.name = 'ModelEndpointsError';
  }
}

const Entry = z
  .object({
    provider: z.enum(['openai', 'anthropic']),
    baseURL: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }),
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'the name of an environment variable'),
    headers: z.record(z.string(), z.string()).optional(),
    timeoutMs: z.number().int().min(100).max(3_600_000).optional(),
    maxRetries: z.number().int().min(0).max(10).optional(),
    tenants: z.array(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a tenant id (letters, digits, _ and -)')).min(1).optional(),
    maxTokensParam: z.enum(MAX_TOKENS_PARAMS).optional(),
    maxTokens: z.number().int().min(1).max(128_000).optional(),
  })
  .strict();
const FileSchema = z.object({ endpoints: z.record(z.string(), z.unknown()) }).strict();

const DEFAULTS = { timeoutMs: 120_000, maxRetries: 2 };

/** Reads and checks the file against `env` (for the keys); throws `ModelEndpointsError`, one line naming the entry and the field. */
export function loadModelEndpoints(file: string, env: NodeJS.ProcessEnv): NamedEndpoint[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ModelEndpointsError(file, err instanceof SyntaxError ? `is not JSON (${reason})` : `cannot be read (${reason})`);
  }
  const parsed = FileSchema.safeParse(json);
  if (!parsed.success) throw new ModelEndpointsError(file, 'must be an object {"endpoints": {"<name>": {...}}}');
  return Object.entries(parsed.data.endpoints).map(([name, raw]) => endpointOf(file, name, raw, env));
}

function endpointOf(file: string, name: string, raw: unknown, env: NodeJS.ProcessEnv): NamedEndpoint {
  const at = `endpoints.${name}`;
  if (!ENDPOINT_NAME.test(name)) throw new ModelEndpointsError(file, `${at}: the name must be 1 to 64 letters, digits, _ or -`);
  if (name === DEFAULT_ENDPOINT) throw new ModelEndpointsError(file, `${at}: "default" is the OPENAI_* / ANTHROPIC_* variables' endpoint; pick another name`);
  const parsed = Entry.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue.code === 'unrecognized_keys') throw new ModelEndpointsError(file, `${at}.${issue.keys[0]}: not a field of an endpoint (keys come from apiKeyEnv)`);
    throw new ModelEndpointsError(file, `${at}.${issue.path.join('.') || '(entry)'}: ${issue.message}`);
  }
  const e = parsed.data;
  if (e.provider !== 'openai' && e.maxTokensParam) throw new ModelEndpointsError(file, `${at}.maxTokensParam: only an openai endpoint takes it`);
  if (e.provider !== 'anthropic' && e.maxTokens) throw new ModelEndpointsError(file, `${at}.maxTokens: only an anthropic endpoint takes it (an openai one sends none unless the turn sets maxOutputTokens)`);
  const apiKey = env[e.apiKeyEnv];
  // Never the value in a message: only the variable's name.
  if (!apiKey) throw new ModelEndpointsError(file, `${at}.apiKeyEnv: the variable ${e.apiKeyEnv} is not set`);
  return {
    name,
    provider: e.provider,
    config: {
      baseUrl: e.baseURL,
      apiKey,
      timeoutMs: e.timeoutMs ?? DEFAULTS.timeoutMs,
      maxRetries: e.maxRetries ?? DEFAULTS.maxRetries,
      ...(e.headers && { headers: e.headers }),
      ...(e.maxTokensParam && { maxTokensParam: e.maxTokensParam }),
      ...(e.maxTokens && { maxTokens: e.maxTokens }),
    },
    ...(e.tenants && { tenants: e.tenants }),
  };
}

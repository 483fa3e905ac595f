import { z } from 'zod';
import { DEFAULT_PREFIX, MAX_SUBJECT_PARTITIONS, subjects } from '@steerline/contracts';
import { parseApiKeys } from './auth/api-keys';
import { readApiKeyFile } from './auth/api-keys-file';
import { defaultConsoleDir } from './console/console-assets';

/** The gateway's whole configuration (docs/design.md §7), validated once at start-up. */
export interface GatewayConfig {
  natsUrl: string;
  prefix: string;
  host: string;
  port: number;
  /** API key → tenant; undefined means the API is open and everything runs as tenant `default`. */
  apiKeys: ReadonlyMap<string, string> | undefined;
  /** STEERLINE_API_KEYS_FILE: `sha256:<hex> tenant` per line, reread on SIGHUP. */
  apiKeysFile: string | undefined;
  /** Token bucket per API key (per client address when the API is open); undefined: no limit. */
  rateLimit: RateLimit | undefined;
  /** How often an idle event stream gets a comment line, so proxies keep it open. */
  sseHeartbeatMs: number;
  /** The console's built files (served at /console); undefined: not built, /console answers 404. */
  consoleDir: string | undefined;
  /** Open event streams this gateway serves at most; one more is refused with 429. */
  sseMaxStreams: number;
  /** Open event streams per API key (per client address on an open API) at most. */
  sseMaxStreamsPerKey: number;
  /** Unsent output a stream may hold: past it live messages are dropped, past twice it the stream ends. */
  sseBufferBytes: number;
  /** Replicas of the KV buckets this gateway makes (the agents'; STEERLINE_STREAM_REPLICAS). */
  streamReplicas: number;
  /** The engines' STEERLINE_SUBJECT_PARTITIONS: which subject a conversation's newer events are on (docs/design.md §15); absent: 1. */
  subjectPartitions?: number;
}

export interface RateLimit {
  /** Tokens added per second: the sustained request rate. */
  perSecond: number;
  /** Bucket size: how many requests may arrive at once after a quiet spell. */
  burst: number;
  /** How long a call to the shared store (NATS KV) may take before the gateway fails open to its own bucket. */
  storeTimeoutMs?: number;
  /** Replicas of the shared store's KV bucket when this gateway makes it (STEERLINE_STREAM_REPLICAS). */
  storeReplicas?: number;
}

export const GATEWAY_CONFIG = Symbol('GatewayConfig');

/** Start-up refuses to run on a bad variable and names it. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const NATS_SCHEMES = /^(nats|tls|ws|wss):\/\/[^\s,]+$/;

const EnvSchema = z.object({
  NATS_URL: z
    .string()
    .trim()
    .default('nats://127.0.0.1:4222')
    .refine((v) => v.split(',').every((s) => NATS_SCHEMES.test(s.trim())), 'must be a comma-separated list of nats://host:port URLs'),
  STEERLINE_PREFIX: z
    .string()
    .trim()
    .default(DEFAULT_PREFIX)
    .refine((v) => isSubjectToken(v), 'must be letters, digits, "_" or "-" (it becomes a NATS subject token)'),
  HOST: z.string().trim().min(1, 'must not be empty').default('127.0.0.1'),
  PORT: z
    .string()
    .trim()
    .default('3000')
    .refine((v) => /^\d{1,5}$/.test(v) && Number(v) <= 65_535, 'must be an integer from 0 to 65535')
    .transform(Number),
  STEERLINE_API_KEYS: z.string().optional(),
  STEERLINE_API_KEYS_FILE: z.string().min(1).optional(),
  // Generous defaults: the limit is there to stop a runaway client, not to meter a normal one.
  STEERLINE_RATE_LIMIT: number('a number of requests per second (0 turns the limit off)', '100', (n) => n >= 0),
  STEERLINE_RATE_BURST: number('a positive number of requests', '', (n) => n >= 1),
  STEERLINE_RATE_LIMIT_TIMEOUT_MS: number('an integer from 10 to 10000', '250', (n) => Number.isInteger(n) && n >= 10 && n <= 10_000),
  STEERLINE_STREAM_REPLICAS: number('an integer from 1 to 5', '1', (n) => Number.isInteger(n) && n >= 1 && n <= 5),
  STEERLINE_SUBJECT_PARTITIONS: number(`an integer from 1 to ${MAX_SUBJECT_PARTITIONS}`, '1', (n) => Number.isInteger(n) && n >= 1 && n <= MAX_SUBJECT_PARTITIONS),
  STEERLINE_CONSOLE_DIR: z.string().trim().min(1, 'must not be empty').optional(),
  STEERLINE_SSE_HEARTBEAT_MS: number('an integer from 100 to 300000', '15000', (n) => Number.isInteger(n) && n >= 100 && n <= 300_000),
  STEERLINE_SSE_MAX_STREAMS: number('a positive integer', '20000', (n) => Number.isInteger(n) && n >= 1),
  STEERLINE_SSE_MAX_STREAMS_PER_KEY: number('a positive integer', '1000', (n) => Number.isInteger(n) && n >= 1),
  STEERLINE_SSE_BUFFER_BYTES: number('an integer from 1024 to 67108864', '262144', (n) => Number.isInteger(n) && n >= 1024 && n <= 64 * 1024 * 1024),
});

function number(what: string, fallback: string, ok: (n: number) => boolean) {
  return z
    .string()
    .trim()
    .default(fallback)
    .refine((v) => v === '' || (/^\d+(\.\d+)?$/.test(v) && ok(Number(v))), `must be ${what}`)
    .transform((v) => (v === '' ? undefined : Number(v)));
}

function isSubjectToken(value: string): boolean {
  try {
    subjects(value);
    return true;
  } catch {
    return false;
  }
}

/** Reads the environment; throws `ConfigError` naming every bad variable. */
export function loadGatewayConfig(env: NodeJS.ProcessEnv | Record<string, string | undefined>): GatewayConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${String(i.path[0])} ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  let apiKeys: ReadonlyMap<string, string> | undefined;
  try {
    apiKeys = e.STEERLINE_API_KEYS === undefined ? undefined : parseApiKeys(e.STEERLINE_API_KEYS);
  } catch (err) {
    throw new ConfigError(`invalid configuration: STEERLINE_API_KEYS ${(err as Error).message}`);
  }
  if (e.STEERLINE_API_KEYS_FILE !== undefined) {
    try {
      readApiKeyFile(e.STEERLINE_API_KEYS_FILE);
    } catch (err) {
      throw new ConfigError(`invalid configuration: STEERLINE_API_KEYS_FILE ${(err as Error).message}`);
    }
  }
  const perSecond = e.STEERLINE_RATE_LIMIT ?? 0;
  // Without an explicit burst, two seconds' worth: room for a page that fires a few calls at once.
  const rateLimit =
    perSecond > 0 ? { perSecond, burst: e.STEERLINE_RATE_BURST ?? Math.max(1, Math.ceil(perSecond * 2)), storeTimeoutMs: e.STEERLINE_RATE_LIMIT_TIMEOUT_MS ?? 250, storeReplicas: e.STEERLINE_STREAM_REPLICAS ?? 1 } : undefined;
  return {
    natsUrl: e.NATS_URL,
    prefix: e.STEERLINE_PREFIX,
    host: e.HOST,
    port: e.PORT,
    apiKeys,
    apiKeysFile: e.STEERLINE_API_KEYS_FILE,
    rateLimit,
    sseHeartbeatMs: e.STEERLINE_SSE_HEARTBEAT_MS ?? 15_000,
    consoleDir: e.STEERLINE_CONSOLE_DIR ?? defaultConsoleDir(),
    sseMaxStreams: e.STEERLINE_SSE_MAX_STREAMS ?? 20_000,
    sseMaxStreamsPerKey: e.STEERLINE_SSE_MAX_STREAMS_PER_KEY ?? 1_000,
    sseBufferBytes: e.STEERLINE_SSE_BUFFER_BYTES ?? 262_144,
    streamReplicas: e.STEERLINE_STREAM_REPLICAS ?? 1,
    ...(e.STEERLINE_SUBJECT_PARTITIONS !== undefined && e.STEERLINE_SUBJECT_PARTITIONS > 1 && { subjectPartitions: e.STEERLINE_SUBJECT_PARTITIONS }),
  };
}

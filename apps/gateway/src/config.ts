import { z } from 'zod';
import { DEFAULT_PREFIX, subjects } from '@steerline/contracts';
import { parseApiKeys } from './auth/api-keys';

/** The gateway's whole configuration (DESIGN §7), validated once at start-up. */
export interface GatewayConfig {
  natsUrl: string;
  prefix: string;
  host: string;
  port: number;
  /** API key → tenant; undefined means the API is open and everything runs as tenant `default`. */
  apiKeys: ReadonlyMap<string, string> | undefined;
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
});

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
  return { natsUrl: e.NATS_URL, prefix: e.STEERLINE_PREFIX, host: e.HOST, port: e.PORT, apiKeys };
}

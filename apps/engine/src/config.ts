import { hostname } from 'node:os';
import { z } from 'zod';
import { DEFAULT_PREFIX, uuidv7 } from '@steerline/contracts';

const EngineEnv = z.object({
  NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222'),
  STEERLINE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only').default(DEFAULT_PREFIX),
  STEERLINE_ENGINE_ID: z.string().min(1).optional(),
  /** Comma-separated names of the built-in tools to offer; unset: all, empty: none. */
  STEERLINE_BUILTIN_TOOLS: z.string().optional(),
  STEERLINE_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** How long an engine's lease on its turns lasts without a heartbeat; its turns are settled after. */
  STEERLINE_ENGINE_LEASE_MS: z.coerce.number().int().min(500).max(600_000).default(5000),
});

export interface EngineConfig {
  natsUrl: string;
  prefix: string;
  engineId: string;
  builtinTools?: string[];
  streamReplicas: number;
  leaseMs: number;
}

/** Reads the engine's configuration; a bad variable stops start-up with its name. */
export function loadEngineConfig(env: NodeJS.ProcessEnv): EngineConfig {
  const parsed = EngineEnv.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid engine configuration: ${String(issue.path[0])}: ${issue.message}`);
  }
  const e = parsed.data;
  return {
    natsUrl: e.NATS_URL,
    prefix: e.STEERLINE_PREFIX,
    engineId: e.STEERLINE_ENGINE_ID ?? `${hostname()}-${process.pid}-${uuidv7().slice(-6)}`,
    builtinTools: e.STEERLINE_BUILTIN_TOOLS === undefined ? undefined : e.STEERLINE_BUILTIN_TOOLS.split(',').map((s) => s.trim()).filter(Boolean),
    streamReplicas: e.STEERLINE_STREAM_REPLICAS,
    leaseMs: e.STEERLINE_ENGINE_LEASE_MS,
  };
}

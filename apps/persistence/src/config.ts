import { z } from 'zod';
import { DEFAULT_PREFIX, MAX_SUBJECT_PARTITIONS } from '@steerline/contracts';
import { METRICS_PORTS, metricsEnv, metricsListen, type MetricsListen } from '@steerline/runtime';

/** Injection token for the validated configuration. */
export const PERSISTENCE_CONFIG = Symbol('PERSISTENCE_CONFIG');

export interface PersistenceConfig {
  natsUrl: string;
  databaseUrl: string;
  prefix: string;
  /** Replicas of the stream when this service is the first to create it. */
  streamReplicas: number;
  /**
   * How many partitions a new read-model generation is projected in (conversations
   * split by a hash of their id; each partition has its own consumer, checkpoint
   * and lock, and the live instances share them). A generation keeps the count it
   * was created with; `npm run rebuild` builds one with this count.
   */
  partitions: number;
  /**
   * How many partition tokens the engines write into event subjects
   * (STEERLINE_SUBJECT_PARTITIONS, the same value as the engines'). A generation
   * whose `partitions` equals it reads only its own subjects, one filter each.
   * Absent: 1.
   */
  subjectPartitions?: number;
  /**
   * A fault to inject, for fault tests only. `exit_after_commit`: the projector
   * kills its own process (SIGKILL) right after its first batch commits and
   * before it acks, the window in which a crash must change nothing.
   */
  fault?: 'exit_after_commit';
  /** Where main.ts serves `/metrics` (METRICS_PORT, METRICS_HOST); absent: nowhere. */
  metrics?: MetricsListen;
}

// An empty variable counts as unset, so `DATABASE_URL= npm start` means "use the default".
const unsetIfEmpty = (value: unknown) => (value === '' ? undefined : value);

/** See docs/performance.md, "Partitioned projection", for the measurements behind it. */
export const DEFAULT_PARTITIONS = 1;

const natsServer = /^((nats|tls|ws|wss):\/\/)?[^\s,/]+(:\d+)?\/?$/;

const EnvSchema = z.object({
  NATS_URL: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .default('nats://127.0.0.1:4222')
      .refine((v) => v.split(',').every((s) => natsServer.test(s.trim())), 'expected a comma-separated list of nats:// URLs'),
  ),
  DATABASE_URL: z.preprocess(
    unsetIfEmpty,
    z
      .url({ protocol: /^postgres(ql)?$/, error: 'expected a postgres:// URL' })
      .default('postgres://postgres@127.0.0.1:5432/steerline')
      // The service creates this database when it is missing, so it must be named.
      .refine((v) => databaseName(v).length > 0, 'must name a database, e.g. postgres://host:5432/steerline'),
  ),
  STEERLINE_PREFIX: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, 'expected letters, digits, "_" or "-" (it becomes a subject token)')
      .default(DEFAULT_PREFIX),
  ),
  STEERLINE_STREAM_REPLICAS: z.preprocess(unsetIfEmpty, z.coerce.number().int().min(1).max(5).default(1)),
  STEERLINE_PARTITIONS: z.preprocess(unsetIfEmpty, z.coerce.number().int().min(1).max(64).default(DEFAULT_PARTITIONS)),
  STEERLINE_SUBJECT_PARTITIONS: z.preprocess(unsetIfEmpty, z.coerce.number().int().min(1).max(MAX_SUBJECT_PARTITIONS).default(1)),
  STEERLINE_FAULT: z.preprocess(unsetIfEmpty, z.enum(['exit_after_commit']).optional()),
  ...metricsEnv(METRICS_PORTS.persistence),
});

/** Reads and validates the configuration; throws an error naming every bad variable. */
export function loadPersistenceConfig(env: Record<string, string | undefined> = process.env): PersistenceConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid persistence configuration: ${problems}`);
  }
  const { NATS_URL, DATABASE_URL, STEERLINE_PREFIX, STEERLINE_STREAM_REPLICAS, STEERLINE_PARTITIONS, STEERLINE_SUBJECT_PARTITIONS, STEERLINE_FAULT } = parsed.data;
  const metrics = metricsListen(parsed.data);
  return {
    natsUrl: NATS_URL,
    databaseUrl: DATABASE_URL,
    prefix: STEERLINE_PREFIX,
    streamReplicas: STEERLINE_STREAM_REPLICAS,
    partitions: STEERLINE_PARTITIONS,
    subjectPartitions: STEERLINE_SUBJECT_PARTITIONS,
    ...(STEERLINE_FAULT && { fault: STEERLINE_FAULT }),
    ...(metrics && { metrics }),
  };
}

/** The database a postgres URL names (its path without the leading slash). */
export function databaseName(databaseUrl: string): string {
  return decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
}

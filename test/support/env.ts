import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjects, type Subjects } from '@steerline/contracts';
import { connectNats, readSubject, type StoredEvent } from '@steerline/runtime';
import { Client } from 'pg';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';

/** A prefix no other test run uses, so each suite has its own stream and subjects. */
export function uniquePrefix(): string {
  return `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

export interface NatsHandle {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  s: Subjects;
  /** Every event of the stream, in order. */
  readAll(): Promise<StoredEvent[]>;
  close(): Promise<void>;
}

export async function openNats(prefix: string, url: string = NATS_URL): Promise<NatsHandle> {
  const nc = await connectNats(url, `test-${prefix}`);
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const s = subjects(prefix);
  return {
    nc,
    js,
    jsm,
    s,
    readAll: () => readSubject(js, jsm, s.stream, s.events),
    async close() {
      for (const stream of [s.stream, `KV_${s.turnsBucket}`, `KV_${s.enginesBucket}`, `KV_${s.rateLimitsBucket}`]) await jsm.streams.delete(stream).catch(() => undefined);
      await nc.drain();
    },
  };
}

/** A fresh database for one suite; dropped by the returned function. */
export async function createTestDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `steerline_test_${randomBytes(5).toString('hex')}`;
  const admin = new Client({ connectionString: `${PG_URL}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return {
    url: `${PG_URL}/${name}`,
    name,
    async drop() {
      const c = new Client({ connectionString: `${PG_URL}/postgres` });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function eventually<T>(fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    // A check that throws (a service still recovering) counts as "not yet".
    const value = await Promise.resolve()
      .then(fn)
      .catch((err: unknown) => {
        lastError = err;
        return undefined;
      });
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastError ? `; last error: ${(lastError as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

import { createHash } from 'node:crypto';
import { jetstream, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { decodeJson, encodeJson } from '@steerline/runtime';
import type { SharedBucket } from './lease';

/** A shared bucket as read, with the revision a write must expect. */
export interface Versioned {
  /** The KV revision to expect; 0: the key has no value. */
  revision: number;
  bucket: SharedBucket | undefined;
}

/** Another gateway wrote the key since it was read: read again and retry. */
export class WriteConflict extends Error {
  constructor() {
    super('the shared bucket changed since it was read');
    this.name = 'WriteConflict';
  }
}

/** The shared store did not answer within its timeout (or at all). */
export class StoreUnavailable extends Error {
  constructor(reason: string) {
    super(`the rate-limit store does not answer: ${reason}`);
    this.name = 'StoreUnavailable';
  }
}

/**
 * The shared token buckets on a NATS KV bucket (history 1, so a key holds its
 * last value only). Every call is bounded by `timeoutMs`. Values expire after
 * `ttlMs` unwritten, which is at least the time to refill a whole burst, so an
 * expired key and a full bucket are the same thing.
 */
export class BucketStore {
  private kv?: Promise<KV>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly name: string,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
    private readonly replicas = 1,
  ) {}

  async read(caller: string): Promise<Versioned> {
    const entry = await this.bounded((kv) => kv.get(keyOf(caller)));
    if (!entry || entry.operation !== 'PUT') return { revision: entry?.revision ?? 0, bucket: undefined };
    return { revision: entry.revision, bucket: decodeJson(entry.value) as SharedBucket };
  }

  /** Writes the bucket if the key is still at `revision`; returns the new revision. */
  write(caller: string, bucket: SharedBucket, revision: number): Promise<number> {
    return this.bounded((kv) => kv.put(keyOf(caller), encodeJson(bucket), { previousSeq: revision, timeout: this.timeoutMs }));
  }

  private async bounded<T>(op: (kv: KV) => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailable(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return await Promise.race([this.open().then(op), timeout]);
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence) throw new WriteConflict();
      // The bucket may be gone (deleted, or on a NATS that lost it: then nothing
      // answers and the call times out): the next attempt binds or makes it anew.
      this.kv = undefined;
      throw err instanceof StoreUnavailable ? err : new StoreUnavailable((err as Error)?.message ?? String(err));
    } finally {
      clearTimeout(timer);
    }
  }

  /** Made (or bound) once; a failed attempt is retried on the next call. */
  private open(): Promise<KV> {
    this.kv ??= new Kvm(jetstream(this.nc, { timeout: this.timeoutMs }))
      .create(this.name, { history: 1, ttl: this.ttlMs, replicas: this.replicas })
      .catch((err: unknown) => {
        this.kv = undefined;
        throw err;
      });
    return this.kv;
  }
}

// Client keys hold API key ids and addresses (":" and other characters a KV
// key may not have): a digest is a valid key and says nothing about the caller.
function keyOf(caller: string): string {
  return createHash('sha256').update(caller).digest('hex').slice(0, 32);
}

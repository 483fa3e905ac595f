import { SteerlineError } from '@steerline/contracts';
import type { RateLimit } from '../config';
import { WriteConflict, type BucketStore, type Versioned } from './bucket-store';
import { lease, leaseSize } from './lease';
import { RateLimiter, rateLimited } from './token-bucket';

/** After the store failed, requests are limited by this gateway alone for this long before it is tried again. */
const RETRY_STORE_MS = 1_000;
/** One warning per this long at most, however many requests fail open. */
const WARN_EVERY_MS = 10_000;
/** Compare-and-set attempts per lease before giving up on the key for this request. */
const MAX_ATTEMPTS = 5;
const IDLE_FORGET_MS = 60_000;
const SWEEP_EVERY = 1_000;

export interface FailOpenReport {
  /** A store call failed or timed out. */
  storeFailed(error: Error): void;
  /** A request was decided by this gateway's own bucket because the store did not answer. */
  failedOpen(): void;
}

/** This gateway's share of one key's bucket. */
interface Held {
  /** Tokens leased from the shared bucket, not yet spent. */
  tokens: number;
  /** The shared bucket as last read or written here: a write expects its revision. */
  known?: Versioned;
  /** The shared bucket has no token before this time (ms): refused without asking. */
  emptyUntil: number;
  /** Requests waiting for the lease in flight. */
  waiting: number;
  refilling?: Promise<void>;
  usedAt: number;
}

/**
 * Rate limits that hold across gateways: one token bucket per API key, shared
 * on NATS KV and changed by compare-and-set. A gateway leases a few tokens per
 * write (`leaseSize`) and spends them locally, topping up in the background
 * when half are gone, so most requests pay nothing and the rest one KV round
 * trip. When the store does not answer within its timeout, the gateway fails
 * open to its own in-memory bucket (each gateway then allows the full rate),
 * warns, and counts it; it tries the store again a second later.
 */
export class SharedRateLimiter {
  private readonly held = new Map<string, Held>();
  private readonly own: RateLimiter;
  private readonly size: number;
  private storeDownUntil = 0;
  private warnedAt = -Infinity;
  private failures = 0;
  private calls = 0;

  constructor(
    private readonly limit: RateLimit,
    private readonly store: BucketStore,
    private readonly report: FailOpenReport,
    private readonly warn: (message: string, fields: Record<string, unknown>) => void,
  ) {
    this.own = new RateLimiter(limit);
    this.size = leaseSize(limit);
  }

  /** Takes one token for `caller` (at once when one is leased here), or throws `rate_limited`. */
  take(caller: string): void | Promise<void> {
    const now = Date.now();
    if (++this.calls % SWEEP_EVERY === 0) this.sweep(now);
    if (now < this.storeDownUntil) return this.failOpen(caller);
    const held = this.heldFor(caller, now);
    if (held.tokens >= 1) return this.spend(caller, held);
    if (now < held.emptyUntil) throw this.refusal(held.emptyUntil - now);
    return this.takeLeased(caller, held);
  }

  private async takeLeased(caller: string, held: Held): Promise<void> {
    held.waiting++;
    try {
      for (;;) {
        await (held.refilling ?? this.refill(caller, held));
        if (Date.now() < this.storeDownUntil) return this.failOpen(caller);
        if (held.tokens >= 1) return this.spend(caller, held);
        const now = Date.now();
        if (now < held.emptyUntil) throw this.refusal(held.emptyUntil - now);
      }
    } finally {
      held.waiting--;
    }
  }

  private spend(caller: string, held: Held): void {
    held.tokens -= 1;
    // Top up before running dry, so the next requests do not wait for the store.
    if (!held.refilling && held.tokens < this.size / 2 && Date.now() >= held.emptyUntil) void this.refill(caller, held);
  }

  /** Starts one lease for `caller`; every request that finds it running waits for it. */
  private refill(caller: string, held: Held): Promise<void> {
    const running: Promise<void> = this.leaseOnce(caller, held).finally(() => {
      if (held.refilling === running) held.refilling = undefined;
    });
    held.refilling = running;
    return running;
  }

  /** One lease: read (unless known), take, compare-and-set; re-read on a conflict. Never rejects. */
  private async leaseOnce(caller: string, held: Held): Promise<void> {
    try {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const known = held.known ?? (await this.store.read(caller));
        const want = Math.max(this.size - held.tokens, 0) + held.waiting;
        const taken = lease(known.bucket, Date.now(), this.limit, Math.min(Math.ceil(want), this.limit.burst));
        if (taken.granted === 0) {
          held.known = known;
          held.emptyUntil = Date.now() + taken.retryAfterMs;
          return;
        }
        try {
          const revision = await this.store.write(caller, taken.bucket, known.revision);
          held.known = { revision, bucket: taken.bucket };
          held.tokens += taken.granted;
          return;
        } catch (err) {
          if (!(err instanceof WriteConflict)) throw err;
          held.known = undefined;
        }
      }
    } catch (err) {
      this.storeFailed(err as Error);
    }
  }

  private storeFailed(error: Error): void {
    this.report.storeFailed(error);
    this.failures++;
    this.storeDownUntil = Date.now() + RETRY_STORE_MS;
    // Leases and known revisions may be stale once the store is back.
    for (const held of this.held.values()) held.known = undefined;
    const now = Date.now();
    if (now - this.warnedAt < WARN_EVERY_MS) return;
    this.warnedAt = now;
    this.warn('the shared rate-limit store does not answer: failing open to this gateway’s own limit (each gateway allows the full rate)', {
      error: error.message,
      failuresSinceLastWarning: this.failures,
    });
    this.failures = 0;
  }

  private failOpen(caller: string): void {
    this.report.failedOpen();
    this.own.take(caller);
  }

  private refusal(waitMs: number): SteerlineError {
    return rateLimited(this.limit, waitMs / 1000);
  }

  private heldFor(caller: string, now: number): Held {
    let held = this.held.get(caller);
    if (!held) {
      held = { tokens: 0, emptyUntil: 0, waiting: 0, usedAt: now };
      this.held.set(caller, held);
    }
    held.usedAt = now;
    return held;
  }

  // Unspent leased tokens of a forgotten caller are simply lost: the key gets
  // fewer requests, never more.
  private sweep(now: number): void {
    for (const [caller, held] of this.held) if (now - held.usedAt > IDLE_FORGET_MS && !held.refilling) this.held.delete(caller);
  }
}

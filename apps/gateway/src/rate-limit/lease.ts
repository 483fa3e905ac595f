import type { RateLimit } from '../config';

/**
 * One API key's token bucket as every gateway shares it (a KV value): the
 * tokens left at wall-clock time `at` (ms since the epoch).
 */
export interface SharedBucket {
  tokens: number;
  at: number;
}

/** What one compare-and-set takes from a shared bucket. */
export interface Lease {
  /** Whole tokens moved to the gateway (0: the bucket has none). */
  granted: number;
  /** The bucket to write back (unchanged when nothing was granted). */
  bucket: SharedBucket;
  /** With nothing granted: how long until the bucket holds one token again. */
  retryAfterMs: number;
}

/** A lease is about this long of the key's rate. */
const LEASE_SECONDS = 0.05;

/**
 * How many tokens a gateway takes per compare-and-set: about 50 ms of the
 * rate, at least one, at most a quarter of the burst. Every gateway holds at
 * most this many unspent, so N gateways together admit at most
 * `burst + rate × T + N × leaseSize` requests in any window of T seconds.
 */
export function leaseSize(limit: RateLimit): number {
  return Math.max(1, Math.min(Math.floor(limit.burst / 4), Math.ceil(limit.perSecond * LEASE_SECONDS)));
}

/**
 * The bucket at `now`: refilled at the rate, never above the burst. No bucket
 * (never written, or expired from the KV) is a full one. A clock behind the
 * last writer's adds nothing, so skew between gateways can slow a key down
 * but never lets time count twice.
 */
export function refilled(bucket: SharedBucket | undefined, now: number, limit: RateLimit): SharedBucket {
  if (!bucket) return { tokens: limit.burst, at: now };
  const elapsed = Math.max(0, now - bucket.at);
  return { tokens: Math.min(limit.burst, bucket.tokens + (elapsed / 1000) * limit.perSecond), at: Math.max(now, bucket.at) };
}

/** Takes up to `want` whole tokens from the bucket as it is at `now`. */
export function lease(bucket: SharedBucket | undefined, now: number, limit: RateLimit, want: number): Lease {
  const current = refilled(bucket, now, limit);
  const granted = Math.max(0, Math.min(want, Math.floor(current.tokens)));
  if (granted === 0) return { granted, bucket: current, retryAfterMs: Math.ceil(((1 - current.tokens) / limit.perSecond) * 1000) };
  return { granted, bucket: { tokens: current.tokens - granted, at: current.at }, retryAfterMs: 0 };
}

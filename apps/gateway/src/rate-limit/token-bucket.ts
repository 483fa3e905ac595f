import { SteerlineError } from '@steerline/contracts';
import type { RateLimit } from '../config';
import { refilled } from './lease';

// Buckets of callers not seen for this long are forgotten (a full bucket and
// no bucket behave the same), so memory follows the active callers only.
const IDLE_FORGET_MS = 60_000;
const SWEEP_EVERY = 1_000;

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per caller, in this gateway's memory: each instance limits
 * on its own, so N gateways behind a balancer allow up to N times the rate.
 * The shared limiter falls back to it while the shared store does not answer.
 * `now` is injectable so the arithmetic is tested without sleeping.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private calls = 0;

  constructor(
    private readonly limit: RateLimit,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes one token for `caller` or throws `rate_limited` with the seconds until one is back. */
  take(caller: string): void {
    const now = this.now();
    if (++this.calls % SWEEP_EVERY === 0) this.sweep(now);
    const bucket = refilled(this.buckets.get(caller), now, this.limit);
    this.buckets.set(caller, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    throw rateLimited(this.limit, (1 - bucket.tokens) / this.limit.perSecond);
  }

  get size(): number {
    return this.buckets.size;
  }

  private sweep(now: number): void {
    for (const [caller, bucket] of this.buckets) if (now - bucket.at > IDLE_FORGET_MS) this.buckets.delete(caller);
  }
}

/** The refusal of a request over its key's limit, with the whole seconds (at least one) until a token is back. */
export function rateLimited(limit: RateLimit, waitSeconds: number): SteerlineError {
  const retryAfterSeconds = Math.max(1, Math.ceil(waitSeconds));
  return new SteerlineError('rate_limited', `too many requests: at most ${limit.perSecond}/s (burst ${limit.burst}) per API key`, { retryAfterSeconds });
}

import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { SteerlineError, uuidv7 } from '@steerline/contracts';
import { connectNats } from '@steerline/runtime';
import { NATS_URL } from '../testing/harness';
import { BucketStore } from './bucket-store';
import { leaseSize } from './lease';
import { SharedRateLimiter } from './shared-rate-limiter';

describe('the shared rate limiter, on a real NATS KV bucket', () => {
  const bucket = `rltest_${uuidv7().replace(/-/g, '').slice(-12)}`;
  const limit = { perSecond: 50, burst: 10 };
  let nc: NatsConnection;
  const quiet = { storeFailed: () => undefined, failedOpen: () => undefined };

  beforeAll(async () => {
    nc = await connectNats(NATS_URL, 'shared-rate-limiter-spec');
  });
  afterAll(async () => {
    await (await jetstreamManager(nc)).streams.delete(`KV_${bucket}`).catch(() => undefined);
    await nc.drain();
  });

  const admit = async (limiter: SharedRateLimiter, caller: string): Promise<boolean> => {
    try {
      await limiter.take(caller);
      return true;
    } catch (err) {
      if (err instanceof SteerlineError && err.code === 'rate_limited') return false;
      throw err;
    }
  };

  it('two gateways on one bucket together admit the rate, not twice it', async () => {
    const gateways = [0, 1].map(() => new SharedRateLimiter(limit, new BucketStore(nc, bucket, 60_000, 1_000), quiet, () => undefined));
    let admitted = 0;
    let asked = 0;
    const started = performance.now();
    // Both ask every 2 ms for a second: far above 50/s.
    while (performance.now() - started < 1_000) {
      for (const g of gateways) {
        asked++;
        if (await admit(g, 'key:k1')) admitted++;
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    const seconds = (performance.now() - started) / 1000;
    expect(admitted).toBeLessThanOrEqual(limit.burst + limit.perSecond * seconds + 2 * leaseSize(limit));
    // The key gets its rate, not a fraction of it; a busy machine that asked less than that must have been let through every time.
    expect(admitted).toBeGreaterThanOrEqual(Math.min(asked, limit.burst + limit.perSecond * seconds * 0.5));
  });

  it('fails open to its own bucket when the store does not answer, warns once and counts every failure and every request let through', async () => {
    const gone = await connectNats(NATS_URL, 'shared-rate-limiter-spec-closed');
    await gone.close();
    const counted = { failed: 0, open: 0 };
    const warnings: string[] = [];
    const limiter = new SharedRateLimiter(
      limit,
      new BucketStore(gone, bucket, 60_000, 100),
      { storeFailed: () => counted.failed++, failedOpen: () => counted.open++ },
      (message) => warnings.push(message),
    );
    const started = performance.now();
    for (let i = 0; i < 5; i++) expect(await admit(limiter, 'key:k2')).toBe(true);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(counted).toEqual({ failed: 1, open: 5 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/failing open/);
    // Its own bucket still holds the key to the burst meanwhile.
    let admitted = 5;
    while (await admit(limiter, 'key:k2')) admitted++;
    expect(admitted).toBeLessThanOrEqual(limit.burst + 1);
  });
});

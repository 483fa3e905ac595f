import { lease, leaseSize, refilled } from './lease';

const limit = { perSecond: 100, burst: 200 };

describe('leasing tokens from a shared bucket', () => {
  it('treats a key with no bucket as a full one', () => {
    expect(lease(undefined, 1_000, limit, 5)).toEqual({ granted: 5, bucket: { tokens: 195, at: 1_000 }, retryAfterMs: 0 });
  });

  it('refills at the rate and never above the burst', () => {
    expect(refilled({ tokens: 0, at: 1_000 }, 1_500, limit).tokens).toBe(50);
    expect(refilled({ tokens: 0, at: 1_000 }, 60_000, limit).tokens).toBe(200);
  });

  it('grants only whole tokens the bucket has, and says when the next one is back when it has none', () => {
    expect(lease({ tokens: 2.5, at: 1_000 }, 1_000, limit, 5).granted).toBe(2);
    const none = lease({ tokens: 0.25, at: 1_000 }, 1_000, limit, 5);
    expect(none.granted).toBe(0);
    expect(none.retryAfterMs).toBe(8); // 0.75 of a token at 100/s
  });

  it('lets no time count twice when this gateway’s clock is behind the last writer’s', () => {
    const behind = lease({ tokens: 0, at: 5_000 }, 4_000, limit, 5);
    expect(behind.granted).toBe(0);
    expect(behind.bucket.at).toBe(5_000);
  });

  it('leases about 50 ms of the rate, at least one token and at most a quarter of the burst', () => {
    expect(leaseSize({ perSecond: 100, burst: 200 })).toBe(5);
    expect(leaseSize({ perSecond: 1, burst: 3 })).toBe(1);
    expect(leaseSize({ perSecond: 10_000, burst: 40 })).toBe(10);
  });

  it('never admits more than burst + rate × T + gateways × lease size in a window, however gateways interleave', () => {
    const rate = { perSecond: 20, burst: 10 };
    const size = leaseSize(rate);
    let bucket: { tokens: number; at: number } | undefined;
    const held = [0, 0, 0];
    let admitted = 0;
    // Three gateways each asking every 5 ms for 3 s (far above the rate).
    for (let now = 0; now < 3_000; now += 5) {
      for (let g = 0; g < held.length; g++) {
        if (held[g] === 0) {
          const l = lease(bucket, now, rate, size);
          bucket = l.bucket;
          held[g] += l.granted;
        }
        if (held[g] > 0) {
          held[g]--;
          admitted++;
        }
      }
    }
    expect(admitted).toBeLessThanOrEqual(rate.burst + rate.perSecond * 3 + held.length * size);
    expect(admitted).toBeGreaterThanOrEqual(rate.perSecond * 3);
  });
});

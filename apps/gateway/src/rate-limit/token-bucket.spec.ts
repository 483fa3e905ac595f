import { SteerlineError } from '@steerline/contracts';
import { RateLimiter } from './token-bucket';

describe('the per-key token bucket', () => {
  let now = 0;
  const limiter = () => new RateLimiter({ perSecond: 2, burst: 3 }, () => now);
  const refused = (l: RateLimiter, caller: string): SteerlineError | undefined => {
    try {
      l.take(caller);
      return undefined;
    } catch (err) {
      return err as SteerlineError;
    }
  };
  beforeEach(() => {
    now = 0;
  });

  it('lets a burst through, then refuses with rate_limited and the seconds until a token is back', () => {
    const l = limiter();
    for (let i = 0; i < 3; i++) expect(refused(l, 'k1')).toBeUndefined();
    const err = refused(l, 'k1');
    expect(err).toMatchObject({ code: 'rate_limited', details: { retryAfterSeconds: 1 } });
  });

  it('refills at the configured rate and never above the burst', () => {
    const l = limiter();
    for (let i = 0; i < 3; i++) l.take('k1');
    now = 500; // half a second at 2/s: one token
    expect(refused(l, 'k1')).toBeUndefined();
    expect(refused(l, 'k1')).toBeDefined();
    now = 60_000;
    for (let i = 0; i < 3; i++) expect(refused(l, 'k1')).toBeUndefined();
    expect(refused(l, 'k1')).toBeDefined();
  });

  it('keeps one bucket per caller, so one busy key does not slow another', () => {
    const l = limiter();
    for (let i = 0; i < 3; i++) l.take('k1');
    expect(refused(l, 'k1')).toBeDefined();
    expect(refused(l, 'k2')).toBeUndefined();
  });

  it('forgets callers that have gone quiet', () => {
    const l = limiter();
    l.take('old');
    now = 120_000;
    for (let i = 0; i < 1000; i++) {
      now += 1000;
      l.take(`k${i % 2}`);
    }
    expect(l.size).toBeLessThanOrEqual(2);
  });
});

import { uuidv7 } from '@steerline/contracts';
import { eventually } from '../support/env';
import { ServiceProcess } from '../support/processes';
import { parseExposition, total } from '../support/prometheus';
import { startStack, type Stack } from '../support/stack';

describe('rate limiting per API key', () => {
  let stack: Stack;
  const get = (key: string) => stack.api('GET', `/turns/${uuidv7()}`, undefined, { authorization: `Bearer ${key}` });

  beforeAll(async () => {
    // One request a second with a burst of three: the fourth in a row is refused. The shared bucket gets 5 s to answer
    // (250 ms by default): a busy machine must not make this gateway fail open to a bucket of its own.
    stack = await startStack({ env: { STEERLINE_API_KEYS: 'k1:acme,k2:acme,k3:globex', STEERLINE_RATE_LIMIT: '1', STEERLINE_RATE_BURST: '3', STEERLINE_RATE_LIMIT_TIMEOUT_MS: '5000' } });
  });
  afterAll(() => stack?.close());

  it('lets a burst through, then answers 429 rate_limited with Retry-After, and lets the key in again once a token is back', async () => {
    // Sent together: one after the other, three reads slower than a second (a busy machine) let a token back in before the fourth.
    const answers = await Promise.all(Array.from({ length: 4 }, () => get('k1')));
    expect(answers.map((a) => a.status).sort()).toEqual([404, 404, 404, 429]);
    const limited = answers.find((a) => a.status === 429)!;
    expect(limited.body.error).toMatchObject({ code: 'rate_limited', retryAfterSeconds: 1 });
    expect(limited.headers.get('retry-after')).toBe('1');

    await new Promise((r) => setTimeout(r, 1_100));
    expect((await get('k1')).status).toBe(404);
  });

  it('limits each key on its own, even two keys of one tenant', async () => {
    const answers = await Promise.all(Array.from({ length: 4 }, () => get('k2')));
    expect(answers.map((a) => a.status).sort()).toEqual([404, 404, 404, 429]);
    expect((await get('k3')).status).toBe(404);
  });

  it('never limits the health probes or metrics, and answers a bad key 401, not 429', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await fetch(`${stack.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${stack.url}/metrics`)).status).toBe(200);
    }
    for (let i = 0; i < 5; i++) expect((await get('not-a-key')).status).toBe(401);
  });
});

describe('rate limiting across gateways (docs/design.md §15)', () => {
  // 5/s with a burst of 5 on each key, enforced by two gateway processes sharing one NATS KV bucket;
  // low, so that the clients below ask far more than that even on a busy machine.
  const RATE = 5;
  const BURST = 5;
  let stack: Stack;
  const gateways: ServiceProcess[] = [];
  const urls: string[] = [];
  const get = (url: string, key: string) => fetch(`${url}/v1/turns/${uuidv7()}`, { headers: { authorization: `Bearer ${key}` } });

  beforeAll(async () => {
    const env = { STEERLINE_API_KEYS: 'k1:acme,k2:acme', STEERLINE_RATE_LIMIT: String(RATE), STEERLINE_RATE_BURST: String(BURST) };
    stack = await startStack({ env });
    for (let i = 0; i < 2; i++) {
      const gateway = new ServiceProcess('gateway', { ...stack.env, ...env, PORT: '0' });
      gateways.push(gateway);
      urls.push(String((await gateway.ready(30_000)).url));
    }
  });
  afterAll(async () => {
    for (const g of gateways) await g.kill();
    await stack?.close();
  });

  it('two gateways together hold a key to its configured rate, where each alone would allow it all', async () => {
    const counts = { passed: 0, limited: 0, other: 0 };
    const started = performance.now();
    const until = started + 3_000;
    // Four clients per gateway, each asking as fast as it is answered: far above the rate.
    await Promise.all(
      urls.flatMap((url) =>
        Array.from({ length: 4 }, async () => {
          while (performance.now() < until) {
            const res = await get(url, 'k1');
            await res.arrayBuffer();
            if (res.status === 429) counts.limited++;
            else if (res.status === 404) counts.passed++;
            else counts.other++;
          }
        }),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    // The bound the design states: burst + rate × T + gateways × lease (1 token at 5/s).
    expect(counts.other).toBe(0);
    expect(counts.passed).toBeLessThanOrEqual(BURST + RATE * seconds + 2 * 1);
    // And the key did get its rate, not a fraction of it; each gateway alone would have allowed twice this.
    expect(counts.passed).toBeGreaterThanOrEqual(BURST + RATE * 3 * 0.6);
    expect(counts.limited).toBeGreaterThan(counts.passed);
  });

  it('fails open when the shared store is gone: requests pass, the gateway warns and counts it', async () => {
    await stack.nats.jsm.streams.delete(`KV_${stack.nats.s.rateLimitsBucket}`);
    const res = await get(urls[0], 'k2');
    expect(res.status).toBe(404);
    const metrics = await eventually(async () => {
      const text = await (await fetch(`${urls[0]}/metrics`)).text();
      const samples = [parseExposition(text)];
      return total(samples, 'steerline_rate_limit_store_failures_total') >= 1 && total(samples, 'steerline_rate_limit_failed_open_total') >= 1 ? text : undefined;
    }, 10_000, 'the fail-open metrics');
    expect(metrics).toContain('steerline_rate_limit_failed_open_total');
    await eventually(() => gateways[0].lines.some((l) => l.includes('failing open')) || undefined, 10_000, 'the fail-open warning');
    // A second later it tries the store again, and makes the bucket anew.
    const bucket = `KV_${stack.nats.s.rateLimitsBucket}`;
    await eventually(async () => {
      await (await get(urls[0], 'k2')).arrayBuffer();
      return (await stack.nats.jsm.streams.info(bucket).catch(() => undefined)) ? true : undefined;
    }, 10_000, 'the gateway to make the bucket again');
  });
});

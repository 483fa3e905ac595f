import { uuidv7 } from '@steerline/contracts';
import { startStack, type Stack } from '../support/stack';

describe('rate limiting per API key', () => {
  let stack: Stack;
  const get = (key: string) => stack.api('GET', `/turns/${uuidv7()}`, undefined, { authorization: `Bearer ${key}` });

  beforeAll(async () => {
    // One request a second with a burst of three: the fourth in a row is refused.
    stack = await startStack({ env: { STEERLINE_API_KEYS: 'k1:acme,k2:acme,k3:globex', STEERLINE_RATE_LIMIT: '1', STEERLINE_RATE_BURST: '3' } });
  });
  afterAll(() => stack?.close());

  it('lets a burst through, then answers 429 rate_limited with Retry-After, and lets the key in again once a token is back', async () => {
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await get('k1'));
    expect(answers.slice(0, 3).map((a) => a.status)).toEqual([404, 404, 404]);
    const limited = answers[3];
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ code: 'rate_limited', retryAfterSeconds: 1 });
    expect(limited.headers.get('retry-after')).toBe('1');

    await new Promise((r) => setTimeout(r, 1_100));
    expect((await get('k1')).status).toBe(404);
  });

  it('limits each key on its own, even two keys of one tenant', async () => {
    for (let i = 0; i < 3; i++) await get('k2');
    expect((await get('k2')).status).toBe(429);
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

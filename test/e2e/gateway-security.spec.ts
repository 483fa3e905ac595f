import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/env';
import { ServiceProcess } from '../support/processes';
import { startStack, type Stack } from '../support/stack';

/**
 * Issue 22, the HTTP side: API keys given hashed in STEERLINE_API_KEYS_FILE
 * and reread on SIGHUP without a restart (a gateway process of its own, sent a
 * real signal), and the security headers on every kind of answer.
 */
const sha = (key: string) => createHash('sha256').update(key).digest('hex');

let stack: Stack;
let gateway: ServiceProcess;
let url: string;
const dir = mkdtempSync(join(tmpdir(), 'steerline-keys-'));
const keysFile = join(dir, 'api-keys');

const create = (key: string) => fetch(`${url}/v1/conversations`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

beforeAll(async () => {
  stack = await startStack();
  writeFileSync(keysFile, `# the operators' keys\nsha256:${sha('key-of-acme')} acme\n\n`);
  gateway = new ServiceProcess('gateway', { ...stack.env, PORT: '0', STEERLINE_RATE_LIMIT: '0', STEERLINE_API_KEYS_FILE: keysFile });
  const ready = await gateway.ready();
  url = String(/"url":"([^"]+)"/.exec(JSON.stringify(ready))?.[1]);
});

afterAll(async () => {
  await gateway?.kill();
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('API keys from a hashed keys file', () => {
  it('accepts a listed key for its tenant and refuses others', async () => {
    const created = await create('key-of-acme');
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    // The read model lags the log: the conversation is readable once the projector has it.
    const read = () => fetch(`${url}/v1/conversations/${id}`, { headers: { authorization: 'Bearer key-of-acme' } }).then((r) => r.status);
    expect(await eventually(async () => ((await read()) === 200 ? 200 : undefined), 10_000, 'the conversation to be readable')).toBe(200);
    expect((await create('key-of-beta')).status).toBe(401);
  });

  it('rereads the file on SIGHUP: a new key works and a removed one stops, without a restart; a broken file changes nothing', async () => {
    writeFileSync(keysFile, `sha256:${sha('key-of-beta')} beta\n`);
    gateway.signal('SIGHUP');
    await eventually(async () => ((await create('key-of-beta')).status === 201 ? true : undefined), 10_000, 'the new key to be accepted');
    expect((await create('key-of-acme')).status).toBe(401);
    // Its log is written asynchronously: the line may reach this pipe after the key already works.
    await eventually(() => gateway.lines.some((l) => l.includes('API keys reloaded')) || undefined, 10_000, 'the reload to be logged');

    writeFileSync(keysFile, 'key-of-gamma gamma\n');
    gateway.signal('SIGHUP');
    await eventually(() => (gateway.lines.some((l) => l.includes('API keys file refused')) ? true : undefined), 10_000, 'the broken file to be refused');
    expect((await create('key-of-beta')).status).toBe(201);
    expect((await create('key-of-gamma')).status).toBe(401);
  });
});

describe('security headers', () => {
  it('are on every answer: success, error, unknown route, probes and the HTML page, with no server banner', async () => {
    const answers = await Promise.all([
      create('key-of-beta'),
      create('not-a-key'),
      fetch(`${url}/v1/nowhere`, { headers: { authorization: 'Bearer key-of-beta' } }),
      fetch(`${url}/healthz`),
      fetch(`${url}/docs`),
    ]);
    expect(answers.map((r) => r.status)).toEqual([201, 401, 404, 200, 200]);
    for (const res of answers) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-powered-by')).toBeNull();
    }
    expect(answers[4].headers.get('content-type')).toMatch(/text\/html/);
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStack, type Stack } from '../support/stack';

const ACME = { authorization: 'Bearer k1' };
const GLOBEX = { authorization: 'Bearer k2' };
// Secrets that must never be part of an answer.
const SECRETS = ['sk-default-secret', 'sk-local-secret', 'sk-claude-secret', 'header-secret'];

/** GET /v1/tools and GET /v1/models (docs/design.md §6.1), answered by the engine over NATS. */
describe('discovery: the tools and models a tenant can use', () => {
  let stack: Stack;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'steerline-models-'));
    const file = join(dir, 'models.json');
    writeFileSync(
      file,
      JSON.stringify({
        endpoints: {
          local: { provider: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeyEnv: 'LOCAL_KEY', headers: { 'X-Team': 'header-secret' }, tenants: ['acme'] },
          claude: { provider: 'anthropic', baseURL: 'http://127.0.0.1:9', apiKeyEnv: 'CLAUDE_KEY' },
        },
      }),
    );
    stack = await startStack({
      env: {
        STEERLINE_API_KEYS: 'k1:acme,k2:globex',
        STEERLINE_MODELS: file,
        LOCAL_KEY: 'sk-local-secret',
        CLAUDE_KEY: 'sk-claude-secret',
        OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
        OPENAI_API_KEY: 'sk-default-secret',
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('GET /v1/models lists the providers and the endpoints offered to the tenant, without a key or a header', async () => {
    const acme = await stack.api('GET', '/models', undefined, ACME);
    expect(acme.status).toBe(200);
    expect(acme.headers.get('content-type')).toMatch(/^application\/json/);
    const endpoints = (acme.body.endpoints as { name: string; provider: string }[]).map((e) => `${e.name}:${e.provider}`).sort();
    expect(endpoints).toEqual(expect.arrayContaining(['claude:anthropic', 'default:openai', 'local:openai']));
    expect(acme.body.providers).toEqual(expect.arrayContaining(['openai', 'anthropic']));
    expect(acme.body.endpoints.find((e: { name: string }) => e.name === 'local')).toEqual({ name: 'local', provider: 'openai', baseURL: 'http://127.0.0.1:9/v1' });

    // `local` is offered to acme only.
    const globex = await stack.api('GET', '/models', undefined, GLOBEX);
    expect(globex.body.endpoints.map((e: { name: string }) => e.name)).not.toContain('local');

    const text = JSON.stringify([acme.body, globex.body]);
    for (const secret of SECRETS) expect(text).not.toContain(secret);
  });

  it('GET /v1/tools lists each tool with its description, JSON Schema, source and default approval', async () => {
    const res = await stack.api('GET', '/tools', undefined, ACME);
    expect(res.status).toBe(200);
    const echo = res.body.tools.find((t: { name: string }) => t.name === 'echo');
    expect(echo).toEqual({ name: 'echo', description: expect.any(String), parameters: expect.objectContaining({ type: 'object' }), source: 'builtin', approval: false });
    expect(res.body.tools.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['echo', 'sleep']));
    for (const tool of res.body.tools) expect(tool).toEqual({ name: expect.any(String), description: expect.any(String), parameters: expect.any(Object), source: expect.stringMatching(/^(builtin|service|mcp:.+)$/), approval: expect.any(Boolean) });
  });

  it('answers 503 unavailable, within the request timeout, when no engine answers', async () => {
    await stack.engine.close();
    const started = Date.now();
    for (const path of ['/tools', '/models']) {
      const res = await stack.api('GET', path, undefined, ACME);
      expect({ path, status: res.status, code: res.body.error.code }).toEqual({ path, status: 503, code: 'unavailable' });
    }
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

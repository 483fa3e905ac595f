import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SteerlineError } from '@steerline/contracts';
import { loadEngineConfig } from '../config';
import { configuredModels } from './model.registry';

describe('named model endpoints (STEERLINE_MODELS)', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'steerline-endpoints-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (json: unknown) => {
    const path = join(dir, `${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(path, typeof json === 'string' ? json : JSON.stringify(json));
    return path;
  };
  const local = { provider: 'openai', baseURL: 'http://127.0.0.1:11434/v1', apiKeyEnv: 'LOCAL_KEY' };
  const config = (json: unknown, env: Record<string, string> = { LOCAL_KEY: 'k-secret' }) => loadEngineConfig({ STEERLINE_MODELS: file(json), ...env });
  /** The one line a bad file stops the engine with. */
  const problem = (json: unknown, env?: Record<string, string>) => {
    try {
      config(json, env);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('the file was accepted');
  };

  it('each entry becomes an endpoint a turn names, with the key read from the variable apiKeyEnv names', () => {
    const { endpoints } = config({ endpoints: { local: { ...local, headers: { 'X-Org': 'o' }, timeoutMs: 5000, maxRetries: 0, tenants: ['acme'], maxTokensParam: 'max_completion_tokens' } } });
    expect(endpoints).toEqual([
      { name: 'local', provider: 'openai', tenants: ['acme'], config: { baseUrl: local.baseURL, apiKey: 'k-secret', timeoutMs: 5000, maxRetries: 0, headers: { 'X-Org': 'o' }, maxTokensParam: 'max_completion_tokens' } },
    ]);
    const models = configuredModels(loadEngineConfig({ STEERLINE_MODELS: file({ endpoints: { local: { ...local, tenants: ['acme'] } } }), LOCAL_KEY: 'k', OPENAI_API_KEY: 'sk' }));
    expect(() => models.check({ provider: 'openai', endpoint: 'local', name: 'm' }, 'acme')).not.toThrow();
    expect(() => models.check({ provider: 'openai', name: 'm' }, 'acme')).not.toThrow();
    for (const [spec, tenant] of [[{ provider: 'openai', endpoint: 'local', name: 'm' }, 'other'], [{ provider: 'anthropic', endpoint: 'local', name: 'm' }, 'acme']] as const) {
      expect(() => models.check(spec, tenant)).toThrow(SteerlineError);
      expect(() => models.check(spec, tenant)).toThrow(/^model\.endpoint: /);
    }
    expect(JSON.stringify(models.listing('acme'))).not.toMatch(/k-secret|"sk"/);
  });

  it.each([
    ['a missing baseURL', { endpoints: { local: { ...local, baseURL: undefined } } }, /STEERLINE_MODELS .*: endpoints\.local\.baseURL: /],
    ['an unknown provider', { endpoints: { local: { ...local, provider: 'gemini' } } }, /: endpoints\.local\.provider: /],
    ['a field no entry takes', { endpoints: { local: { ...local, apiKey: 'inline' } } }, /: endpoints\.local\.apiKey: not a field of an endpoint/],
    ['the name default', { endpoints: { default: local } }, /: endpoints\.default: "default" is the OPENAI_\* \/ ANTHROPIC_\* variables' endpoint/],
    ['a name that is no token', { endpoints: { 'my endpoint': local } }, /: endpoints\.my endpoint: the name must be/],
    ['a negative timeout', { endpoints: { local: { ...local, timeoutMs: -1 } } }, /: endpoints\.local\.timeoutMs: /],
    ['maxTokensParam on anthropic', { endpoints: { c: { ...local, provider: 'anthropic', maxTokensParam: 'max_tokens' } } }, /: endpoints\.c\.maxTokensParam: /],
    ['no endpoints object', { models: {} }, /must be an object \{"endpoints"/],
    ['not JSON', '{nope', /is not JSON/],
  ])('%s stops the engine with one line naming the entry and the field', (_what, json, message) => {
    const line = problem(json);
    expect(line).toMatch(/^invalid engine configuration: STEERLINE_MODELS /);
    expect(line).toMatch(message);
    expect(line).not.toContain('\n');
  });

  it('an unset key variable is named, its value never', () => {
    expect(problem({ endpoints: { local } }, {})).toMatch(/endpoints\.local\.apiKeyEnv: the variable LOCAL_KEY is not set$/);
    expect(problem({ endpoints: { local: { ...local, baseURL: 'ftp://x' } } }, { LOCAL_KEY: 'k-secret' })).not.toContain('k-secret');
  });
});

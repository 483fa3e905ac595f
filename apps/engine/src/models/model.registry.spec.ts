import { loadEngineConfig } from '../config';
import { configuredModels } from './model.registry';

describe('which model providers the server configuration enables', () => {
  it('offers only the scripted model when neither OPENAI_BASE_URL nor OPENAI_API_KEY is set', () => {
    const models = configuredModels(loadEngineConfig({ OPENAI_BASE_URL: '', OPENAI_API_KEY: '' }));
    expect(models.has('scripted')).toBe(true);
    expect(models.has('openai')).toBe(false);
  });

  it.each([{ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' }, { OPENAI_API_KEY: 'sk-x' }])('offers openai when %p is set', (env) => {
    expect(configuredModels(loadEngineConfig(env)).has('openai')).toBe(true);
  });

  it('refuses to start with an OPENAI_BASE_URL that is not an http(s) URL, naming the variable', () => {
    expect(() => loadEngineConfig({ OPENAI_BASE_URL: 'file:///etc/passwd' })).toThrow(/OPENAI_BASE_URL/);
  });

  it('offers no scripted model with STEERLINE_SCRIPTED_MODEL=off, and says so to a turn that names it', () => {
    const models = configuredModels(loadEngineConfig({ STEERLINE_SCRIPTED_MODEL: 'off' }));
    expect(models.has('scripted')).toBe(false);
    expect(models.refusal('scripted')).toBe('model provider scripted is turned off on this server (STEERLINE_SCRIPTED_MODEL=off)');
    expect(configuredModels(loadEngineConfig({})).refusal('scripted')).toBeUndefined();
  });

  it('gives a turn resumed with a provider this engine lacks a model that fails model_failed, naming the provider', async () => {
    const models = configuredModels(loadEngineConfig({ STEERLINE_SCRIPTED_MODEL: 'off' }));
    const request = { step: 1, model: { provider: 'openai' as const, name: 'gpt-4o' }, messages: [], tools: [] };
    await expect(models.get('scripted').complete(request, new AbortController().signal)).rejects.toMatchObject({
      code: 'model_failed',
      message: 'model provider openai is not configured on this server: set OPENAI_BASE_URL or OPENAI_API_KEY',
    });
  });
});

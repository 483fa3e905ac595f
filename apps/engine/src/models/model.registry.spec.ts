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
});

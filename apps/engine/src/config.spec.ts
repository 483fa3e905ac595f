import { loadEngineConfig } from './config';

describe('the engine configuration of the test-only parts and the default model', () => {
  it('offers the scripted model and every built-in tool by default, and no default model', () => {
    const config = loadEngineConfig({});
    expect(config).toMatchObject({ scriptedModel: true, builtinTools: ['sleep', 'echo', 'fail'] });
    expect(config.defaultModel).toBeUndefined();
  });

  it('STEERLINE_SCRIPTED_MODEL=off and STEERLINE_FAIL_TOOL=off turn the scripted model and the fail tool off', () => {
    expect(loadEngineConfig({ STEERLINE_SCRIPTED_MODEL: 'off', STEERLINE_FAIL_TOOL: 'off' })).toMatchObject({ scriptedModel: false, builtinTools: ['sleep', 'echo'] });
    expect(loadEngineConfig({ STEERLINE_FAIL_TOOL: 'off', STEERLINE_BUILTIN_TOOLS: 'echo' }).builtinTools).toEqual(['echo']);
  });

  it('writes event subjects without a partition token unless STEERLINE_SUBJECT_PARTITIONS says how many', () => {
    expect(loadEngineConfig({}).subjectPartitions).toBe(1);
    expect(loadEngineConfig({ STEERLINE_SUBJECT_PARTITIONS: '4' }).subjectPartitions).toBe(4);
    expect(() => loadEngineConfig({ STEERLINE_SUBJECT_PARTITIONS: '65' })).toThrow(/STEERLINE_SUBJECT_PARTITIONS/);
  });

  it('reads STEERLINE_DEFAULT_MODEL as a model spec, with the contract’s defaults filled in', () => {
    expect(loadEngineConfig({ STEERLINE_DEFAULT_MODEL: '{"provider":"scripted","script":[{"text":"hi"}]}' }).defaultModel).toEqual({ provider: 'scripted', name: 'scripted', script: [{ text: 'hi' }] });
    expect(loadEngineConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1', STEERLINE_DEFAULT_MODEL: '{"provider":"openai","name":"llama3.1"}' }).defaultModel).toEqual({ provider: 'openai', name: 'llama3.1' });
  });

  it('reads STEERLINE_DEFAULT_MODEL as an agent when it is an agent reference, checked per turn, not at start-up', () => {
    for (const ref of ['reviewer', 'reviewer@3']) {
      const config = loadEngineConfig({ STEERLINE_DEFAULT_MODEL: ref });
      expect(config.defaultAgent).toBe(ref);
      expect(config.defaultModel).toBeUndefined();
    }
    // A bare model name is an agent's name too: which agent is looked up in the turn's tenant.
    expect(loadEngineConfig({ STEERLINE_DEFAULT_MODEL: 'gpt-4o', STEERLINE_SCRIPTED_MODEL: 'off' }).defaultAgent).toBe('gpt-4o');
    expect(loadEngineConfig({ STEERLINE_DEFAULT_MODEL: '{"provider":"scripted"}' }).defaultAgent).toBeUndefined();
  });

  it.each([
    [{ STEERLINE_DEFAULT_MODEL: 'openai/gpt-4o' }, 'STEERLINE_DEFAULT_MODEL: not JSON, nor an agent name'],
    [{ STEERLINE_DEFAULT_MODEL: 'reviewer@0' }, 'STEERLINE_DEFAULT_MODEL: not JSON, nor an agent name'],
    [{ STEERLINE_DEFAULT_MODEL: 'my agent' }, 'STEERLINE_DEFAULT_MODEL: not JSON, nor an agent name'],
    [{ STEERLINE_DEFAULT_MODEL: '{"provider":"openai"}', OPENAI_API_KEY: 'sk-x' }, 'STEERLINE_DEFAULT_MODEL: not a model: name'],
    [{ STEERLINE_DEFAULT_MODEL: '{"provider":"scripted","script":[{"bogus":1}]}' }, 'STEERLINE_DEFAULT_MODEL: not a model: script.0'],
    [{ STEERLINE_DEFAULT_MODEL: '{"provider":"openai","name":"m"}' }, 'STEERLINE_DEFAULT_MODEL: model provider openai is not configured on this server: set OPENAI_BASE_URL or OPENAI_API_KEY'],
    [{ STEERLINE_DEFAULT_MODEL: '{"provider":"scripted"}', STEERLINE_SCRIPTED_MODEL: 'off' }, 'STEERLINE_DEFAULT_MODEL: model provider scripted is turned off on this server (STEERLINE_SCRIPTED_MODEL=off)'],
    [{ STEERLINE_SCRIPTED_MODEL: 'no' }, 'STEERLINE_SCRIPTED_MODEL: on or off'],
    [{ STEERLINE_FAIL_TOOL: 'false' }, 'STEERLINE_FAIL_TOOL: on or off'],
    [{ STEERLINE_BUILTIN_TOOLS: 'sleep,frob' }, 'STEERLINE_BUILTIN_TOOLS: frob is not a built-in tool (sleep, echo, fail)'],
    [{ STEERLINE_BUILTIN_TOOLS: 'sleep,fail', STEERLINE_FAIL_TOOL: 'off' }, 'STEERLINE_BUILTIN_TOOLS: lists fail, which STEERLINE_FAIL_TOOL=off turns off'],
  ])('refuses to start with %p, naming the variable in one line', (env, message) => {
    let error: Error | undefined;
    try {
      loadEngineConfig(env);
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toContain(`invalid engine configuration: ${message}`);
    expect(error?.message).not.toContain('\n');
  });
});

import { StartTurnCommand, describeZodError } from './commands';
import { agentFieldsOf, parseAgentRef } from './agent-fields';
import { toolAllowed } from './limits';
import { ModelSpecSchema } from './models';

const base = { tenantId: 'default', conversationId: '0190a000-0000-7000-8000-0000000000c1', prompt: 'hi' };
/** The fields a refusal names, from its invalid_request message. */
function refusal(body: Record<string, unknown>): string {
  const parsed = StartTurnCommand.safeParse({ ...base, ...body });
  if (parsed.success) throw new Error(`accepted ${JSON.stringify(body)}`);
  return describeZodError(parsed.error);
}

describe('a turn’s agent fields', () => {
  it('a start with instructions, every setting, a tool allow-list, an agent and a named endpoint is accepted as given', () => {
    const body = {
      instructions: 'Be brief.',
      settings: { temperature: 0.2, topP: 0.9, maxOutputTokens: 512, toolChoice: { name: 'echo' }, parallelToolCalls: false, stop: ['END'], seed: 42 },
      tools: ['echo', 'mcp__files__*'],
      agent: 'reviewer@3',
      model: { provider: 'openai', endpoint: 'local', name: 'qwen3' },
    };
    expect(StartTurnCommand.parse({ ...base, ...body })).toEqual({ ...base, ...body });
  });

  it('bad fields are refused naming the field', () => {
    expect(refusal({ settings: { temperature: 3 } })).toMatch(/^settings\.temperature: /);
    expect(refusal({ settings: { topP: 1.5 } })).toMatch(/^settings\.topP: /);
    expect(refusal({ settings: { maxOutputTokens: 128_001 } })).toMatch(/^settings\.maxOutputTokens: /);
    expect(refusal({ settings: { stop: ['a', 'b', 'c', 'd', 'e'] } })).toMatch(/^settings\.stop: /);
    expect(refusal({ settings: { seed: 1.5 } })).toMatch(/^settings\.seed: /);
    expect(refusal({ settings: { toolChoice: 'sometimes' } })).toMatch(/^settings\.toolChoice: /);
    expect(refusal({ settings: { frequencyPenalty: 1 } })).toMatch(/^settings: .*frequencyPenalty/);
    expect(refusal({ tools: Array.from({ length: 300 }, (_, i) => `tool_${i}`) })).toMatch(/^tools: /);
    expect(refusal({ tools: ['a*b'] })).toMatch(/^tools\.0: /);
    expect(refusal({ instructions: 'x'.repeat(100_001) })).toMatch(/^instructions: /);
    expect(refusal({ instructions: '' })).toMatch(/^instructions: /);
    expect(refusal({ agent: 'reviewer@0' })).toMatch(/^agent: /);
    expect(refusal({ model: { provider: 'openai', endpoint: 'no.dots', name: 'x' } })).toMatch(/^model\.endpoint: /);
  });

  it('a tool choice naming a tool the allow-list does not allow is refused; one it allows, by name or pattern, is not', () => {
    expect(refusal({ tools: ['echo'], settings: { toolChoice: { name: 'sleep' } } })).toMatch(/^settings\.toolChoice\.name: tool sleep is not allowed/);
    expect(refusal({ tools: [], settings: { toolChoice: 'required' } })).toMatch(/^settings\.toolChoice: /);
    expect(StartTurnCommand.safeParse({ ...base, tools: ['mcp__files__*'], settings: { toolChoice: { name: 'mcp__files__read' } } }).success).toBe(true);
    expect(StartTurnCommand.safeParse({ ...base, settings: { toolChoice: { name: 'anything' } } }).success).toBe(true);
  });

  it('an allow-list allows exact names and trailing-* prefixes only; absent allows everything, [] nothing', () => {
    expect(toolAllowed(undefined, 'x')).toBe(true);
    expect(toolAllowed([], 'x')).toBe(false);
    expect(toolAllowed(['echo', 'mcp__files__*'], 'echo')).toBe(true);
    expect(toolAllowed(['echo', 'mcp__files__*'], 'echo2')).toBe(false);
    expect(toolAllowed(['echo', 'mcp__files__*'], 'mcp__files__read')).toBe(true);
    expect(toolAllowed(['echo', 'mcp__files__*'], 'mcp__git__log')).toBe(false);
    expect(toolAllowed(['*'], 'sleep')).toBe(true);
  });

  it('agent references and the recorded fields', () => {
    expect(parseAgentRef('reviewer')).toEqual({ name: 'reviewer' });
    expect(parseAgentRef('reviewer@12')).toEqual({ name: 'reviewer', version: 12 });
    expect(agentFieldsOf({})).toEqual({ settings: {} });
    expect(agentFieldsOf({ instructions: 'x', tools: [], agent: { name: 'a', version: 1 } })).toEqual({ instructions: 'x', settings: {}, tools: [], agent: { name: 'a', version: 1 } });
    expect(ModelSpecSchema.parse({ provider: 'anthropic', name: 'claude' })).toEqual({ provider: 'anthropic', name: 'claude' });
  });
});

import { resolveAgent, resolveStartCommand, type Agent } from './agents';
import { SteerlineError } from './errors';

const agent: Agent = {
  name: 'reviewer',
  version: 3,
  createdAt: '2026-11-29T12:00:00.000Z',
  instructions: 'Review carefully.',
  model: { provider: 'openai', endpoint: 'local', name: 'qwen3' },
  settings: { temperature: 0.2, maxOutputTokens: 2048 },
  tools: ['echo', 'mcp__files__*'],
  approvals: { tools: ['mcp__files__write'] },
};

describe('resolving a turn’s agent', () => {
  it('gives the agent’s fields to a turn that gives none, and names the version', () => {
    expect(resolveAgent(agent, {})).toEqual({
      model: agent.model,
      instructions: agent.instructions,
      settings: agent.settings,
      tools: agent.tools,
      approvals: agent.approvals,
      agent: { name: 'reviewer', version: 3 },
    });
  });

  it('lets every field the turn gives override the agent’s, settings key by key', () => {
    const resolved = resolveAgent(agent, { model: { provider: 'anthropic', name: 'claude' }, instructions: 'Mine.', settings: { temperature: 1 }, tools: ['echo'], approvals: { tools: ['*'] } });
    expect(resolved).toEqual({
      model: { provider: 'anthropic', name: 'claude' },
      instructions: 'Mine.',
      settings: { temperature: 1, maxOutputTokens: 2048 },
      tools: ['echo'],
      approvals: { tools: ['*'] },
      agent: { name: 'reviewer', version: 3 },
    });
  });

  it('leaves a turn without an agent as it is', () => {
    expect(resolveAgent(undefined, { instructions: 'x' })).toEqual({ instructions: 'x' });
  });

  it('refuses a tool choice the resolved allow-list does not allow, naming the field', () => {
    expect(() => resolveAgent(agent, { settings: { toolChoice: { name: 'sleep' } } })).toThrow(/settings\.toolChoice\.name/);
    // The turn's own allow-list makes it allowed.
    expect(resolveAgent(agent, { settings: { toolChoice: { name: 'sleep' } }, tools: ['sleep'] }).settings).toMatchObject({ toolChoice: { name: 'sleep' } });
  });

  it('pins a start command to the version read, and resolving it again gives the same command', async () => {
    const reads: string[] = [];
    const read = async (tenantId: string, name: string, version?: number) => {
      reads.push(`${tenantId}/${name}@${version ?? 'latest'}`);
      return name === 'reviewer' && (version === undefined || version === 3) ? agent : undefined;
    };
    const once = await resolveStartCommand({ tenantId: 'acme', agent: 'reviewer', settings: { seed: 7 } }, read);
    expect(once).toMatchObject({ agent: 'reviewer@3', settings: { temperature: 0.2, maxOutputTokens: 2048, seed: 7 }, tools: agent.tools });
    expect(await resolveStartCommand(once, read)).toEqual(once);
    expect(reads).toEqual(['acme/reviewer@latest', 'acme/reviewer@3']);
    await expect(resolveStartCommand({ tenantId: 'acme', agent: 'reviewer@4' }, read)).rejects.toEqual(new SteerlineError('not_found', 'agent reviewer has no version 4'));
  });
});

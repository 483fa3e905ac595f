import { BUILTIN_TOOLS, ToolRegistry, type Tool, type ToolSource } from './tool.registry';

const tool = (name: string, description = `remote ${name}`): Tool => ({ spec: { name, description, parameters: {} }, run: async () => name });
const source = (tools: Tool[]): ToolSource => ({ list: () => tools, get: (n) => tools.find((t) => t.spec.name === n) });

describe('the tools offered to a model', () => {
  it('are the built-ins and the remote tools known now', () => {
    const remote = [tool('search')];
    const registry = new ToolRegistry(BUILTIN_TOOLS, source(remote));
    expect(registry.specs().map((s) => s.name)).toEqual(['sleep', 'echo', 'fail', 'search']);
    remote.push(tool('lookup'));
    expect(registry.get('lookup')).toBe(remote[1]);
  });

  it('never let a remote tool take over a built-in’s name', () => {
    const registry = new ToolRegistry(BUILTIN_TOOLS, source([tool('fail')]));
    expect(registry.specs().filter((s) => s.name === 'fail')).toHaveLength(1);
    expect(registry.get('fail')).toBe(BUILTIN_TOOLS[2]);
  });

  it('take tools from several sources, the first one keeping a shared name, and ask each for the turn’s tenant', () => {
    const mcp: ToolSource = {
      list: (tenant) => (tenant === 'acme' ? [tool('mcp__files__read'), tool('search', 'mcp search')] : []),
      get: (n, tenant) => (tenant === 'acme' && n === 'mcp__files__read' ? tool(n) : undefined),
    };
    const registry = new ToolRegistry([], [source([tool('search')]), mcp]);
    expect(registry.specs('acme').map((s) => `${s.name}: ${s.description}`)).toEqual(['search: remote search', 'mcp__files__read: remote mcp__files__read']);
    expect(registry.specs('other').map((s) => s.name)).toEqual(['search']);
    expect(registry.get('mcp__files__read', 'acme')).toBeDefined();
    expect(registry.get('mcp__files__read', 'other')).toBeUndefined();
  });

  it('offer a turn only what its allow-list names or prefixes, and give no other tool to run', () => {
    const registry = new ToolRegistry(BUILTIN_TOOLS, source([{ ...tool('mcp__files__read'), source: 'mcp:files' }]));
    expect(registry.specs('acme', ['echo', 'mcp__files__*']).map((s) => s.name)).toEqual(['echo', 'mcp__files__read']);
    expect(registry.specs('acme', []).map((s) => s.name)).toEqual([]);
    expect(registry.get('fail', 'acme', ['echo'])).toBeUndefined();
    expect(registry.get('mcp__files__read', 'acme', ['mcp__*'])).toBeDefined();
  });

  it('list each tool with its source and no approval by default', () => {
    const registry = new ToolRegistry([BUILTIN_TOOLS[1]], [source([{ ...tool('search'), source: 'service' }]), source([{ ...tool('mcp__files__read'), source: 'mcp:files' }])]);
    expect(registry.listings('acme').map((t) => [t.name, t.source, t.approval])).toEqual([
      ['echo', 'builtin', false],
      ['search', 'service', false],
      ['mcp__files__read', 'mcp:files', false],
    ]);
  });
});

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
});

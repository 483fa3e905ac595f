import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEngineConfig } from '../../config';
import { loadMcpConfig } from './mcp.config';

describe('the STEERLINE_MCP_CONFIG file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const file = (content: unknown) => {
    const path = join(dir, `config-${n++}.json`);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  it('reads stdio and Streamable HTTP servers in the common mcpServers shape', () => {
    const path = file({
      mcpServers: {
        files: { command: 'npx', args: ['-y', 'server-filesystem', '/srv'], env: { TOKEN: 't' }, cwd: 'work', tenants: ['acme'] },
        'issue.tracker': { type: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' } },
        off: { command: 'never', disabled: true },
      },
    });
    expect(loadMcpConfig(path)).toEqual([
      { name: 'files', toolPrefix: 'files', tenants: ['acme'], transport: 'stdio', command: 'npx', args: ['-y', 'server-filesystem', '/srv'], env: { TOKEN: 't' }, cwd: join(dir, 'work') },
      { name: 'issue.tracker', toolPrefix: 'issue_tracker', transport: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' } },
    ]);
  });

  it.each([
    ['a missing file', join(dir, 'absent.json'), 'cannot be read (ENOENT)'],
    ['not JSON', '{"mcpServers": ', 'is not JSON'],
    ['no mcpServers', { servers: {} }, 'must be an object with "mcpServers"'],
    ['neither command nor url', { mcpServers: { a: { args: [] } } }, 'server "a" needs either "command" (stdio) or "url" (Streamable HTTP)'],
    ['both command and url', { mcpServers: { a: { command: 'x', url: 'http://h/mcp' } } }, 'server "a" needs either'],
    ['a url that is not http', { mcpServers: { a: { url: 'ftp://h/mcp' } } }, 'server "a": url: an http:// or https:// URL'],
    ['args that are not strings', { mcpServers: { a: { command: 'x', args: [1] } } }, 'server "a": args.0:'],
    ['a bad tenant', { mcpServers: { a: { command: 'x', tenants: ['no spaces'] } } }, 'server "a": tenants.0: a tenant id'],
    ['two names that sanitise alike', { mcpServers: { 'a.b': { command: 'x' }, a_b: { command: 'y' } } }, 'servers "a.b" and "a_b" would both offer tools as mcp__a_b__…'],
  ])('refuses %s with one line naming the problem', (_what, content, problem) => {
    const path = typeof content === 'string' && content.endsWith('.json') ? content : file(content);
    const message = (() => {
      try {
        loadEngineConfig({ STEERLINE_MCP_CONFIG: path });
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    })();
    expect(message).toContain(`invalid engine configuration: STEERLINE_MCP_CONFIG ${path}: ${problem}`);
    expect(message).not.toContain('\n');
  });

  it('is optional: no variable, no MCP servers', () => {
    expect(loadEngineConfig({}).mcp).toBeUndefined();
    expect(loadEngineConfig({ STEERLINE_MCP_CONFIG: '' }).mcp).toBeUndefined();
  });
});

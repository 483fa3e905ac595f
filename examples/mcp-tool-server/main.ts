/**
 * The example tool service's MCP twin: the same two tools, served over stdio
 * with the official MCP SDK, so any MCP client — Steerline's engine among
 * them — can use them. Build, then point STEERLINE_MCP_CONFIG at a file such as
 * `examples/mcp-tool-server/mcp.json`:
 *
 *   npm run build
 *   STEERLINE_MCP_CONFIG=examples/mcp-tool-server/mcp.json npm start
 *
 * stdout is the protocol's: what a person should see goes to stderr, which the
 * engine logs at debug level.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const say = (fields: Record<string, unknown>) => console.error(JSON.stringify({ service: 'example-mcp-tools', ...fields }));

const server = new McpServer({ name: 'example-mcp-tools', version: '1.0.0' });

server.registerTool(
  'word_count',
  { description: 'Counts the words of a text.', inputSchema: { text: z.string().describe('The text to count.') }, annotations: { readOnlyHint: true, idempotentHint: true } },
  async ({ text }) => {
    const words = text.split(/\s+/).filter(Boolean).length;
    say({ event: 'call', tool: 'word_count' });
    // Structured for programs, and the same JSON as text for models (as the MCP spec advises).
    return { content: [{ type: 'text', text: JSON.stringify({ words }) }], structuredContent: { words } };
  },
);

server.registerTool(
  'slow_echo',
  {
    description: 'Returns its text after waiting the given milliseconds; stops when the call is cancelled.',
    inputSchema: { text: z.string(), ms: z.number().int().min(0).max(600_000) },
  },
  async ({ text, ms }, { signal }) => {
    say({ event: 'call', tool: 'slow_echo' });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          say({ event: 'cancelled', tool: 'slow_echo' });
          reject(new Error('cancelled'));
        },
        { once: true },
      );
    });
    return { content: [{ type: 'text', text }] };
  },
);

server
  .connect(new StdioServerTransport())
  .then(() => say({ event: 'ready', tools: ['word_count', 'slow_echo'] }))
  .catch((err: unknown) => {
    say({ event: 'failed', error: (err as Error).message });
    process.exit(1);
  });

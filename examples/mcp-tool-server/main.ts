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
import { setTimeout as delay } from 'node:timers/promises';
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
  async ({ text, ms }, { signal, sendNotification, _meta }) => {
    say({ event: 'call', tool: 'slow_echo' });
    // Progress every second, when the client asked for it with a progress token.
    for (let waited = 0; waited < ms; ) {
      const step = Math.min(1000, ms - waited);
      await delay(step, undefined, { signal }).catch((err: unknown) => {
        say({ event: 'cancelled', tool: 'slow_echo' });
        throw err;
      });
      waited += step;
      if (_meta?.progressToken !== undefined) {
        await sendNotification({ method: 'notifications/progress', params: { progressToken: _meta.progressToken, progress: waited, total: ms } });
      }
    }
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

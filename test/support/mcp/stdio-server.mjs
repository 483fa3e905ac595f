// The test MCP server over stdio: `node test/support/mcp/stdio-server.mjs`.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createServer, record } from './test-server.mjs';

await createServer().connect(new StdioServerTransport());
record({ event: 'started', transport: 'stdio', env: Object.keys(process.env).sort() });

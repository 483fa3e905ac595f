// The test MCP server over Streamable HTTP (stateful sessions):
// `node test/support/mcp/http-server.mjs <port>`; prints "listening <port>" when ready.
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createServer, record } from './test-server.mjs';

const sessions = new Map();

const http = createHttpServer(async (req, res) => {
  if (req.headers.authorization !== 'Bearer test-token') {
    res.writeHead(401).end();
    return;
  }
  const sessionId = req.headers['mcp-session-id'];
  let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
  if (!transport) {
    if (sessionId) {
      res.writeHead(404).end();
      return;
    }
    transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => sessions.set(id, transport) });
    transport.onclose = () => sessions.delete(transport.sessionId);
    await createServer().connect(transport);
  }
  await transport.handleRequest(req, res);
});

http.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const { port } = http.address();
  record({ event: 'started', transport: 'http', port });
  process.stdout.write(`listening ${port}\n`);
});

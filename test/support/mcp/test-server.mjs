// A small MCP server written with the official SDK, for the engine's MCP tests:
// the same tools over stdio (stdio-server.mjs) and Streamable HTTP
// (http-server.mjs). Every call, cancellation and crash is appended as a JSON
// line to the file MCP_EVENTS names, so a test can see what the server saw.
import { appendFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export function record(event) {
  if (process.env.MCP_EVENTS) appendFileSync(process.env.MCP_EVENTS, `${JSON.stringify({ ...event, pid: process.pid })}\n`);
}

const object = (properties, required = []) => ({ type: 'object', properties, required });

const TOOLS = {
  read_file: {
    description: 'Reads a file (a fixed text per path, for tests).',
    inputSchema: object({ path: { type: 'string' } }, ['path']),
    annotations: { readOnlyHint: true, idempotentHint: true },
    run: async ({ path }) => ({ content: [{ type: 'text', text: `contents of ${path}` }] }),
  },
  'read.file': {
    description: 'Sanitised, its name would be read_file’s: the engine refuses it.',
    inputSchema: object({}),
    run: async () => ({ content: [{ type: 'text', text: 'the dotted one' }] }),
  },
  slow: {
    description: 'Answers after ms milliseconds, unless cancelled; reports progress every 100 ms when asked to.',
    inputSchema: object({ ms: { type: 'integer' } }, ['ms']),
    run: ({ ms }, extra) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: `waited ${ms} ms` }] }), ms);
        const progressToken = extra._meta?.progressToken;
        let waited = 0;
        const ticker =
          progressToken !== undefined &&
          setInterval(() => {
            waited = Math.min(ms, waited + 100);
            void extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: waited, total: ms, message: `waited ${waited} ms` } });
          }, 100);
        extra.signal.addEventListener('abort', () => clearInterval(ticker));
        setTimeout(() => clearInterval(ticker), ms);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          record({ event: 'cancelled', tool: 'slow', requestId: extra.requestId, reason: String(extra.signal.reason ?? '') });
          reject(new Error('cancelled'));
        });
      }),
  },
  slow_destructive: {
    description: 'As slow, but declares destructiveHint: an urgent steer waits for it instead of cancelling it.',
    inputSchema: object({ ms: { type: 'integer' } }, ['ms']),
    annotations: { destructiveHint: true },
    run: (args, extra) => TOOLS.slow.run(args, extra),
  },
  refuse: {
    description: 'Always reports an error result.',
    inputSchema: object({ message: { type: 'string' } }),
    run: async ({ message }) => ({ isError: true, content: [{ type: 'text', text: message ?? 'refused' }] }),
  },
  picture: {
    description: 'Returns an image and structured data.',
    inputSchema: object({}),
    run: async () => ({
      content: [{ type: 'text', text: 'a picture:' }, { type: 'image', mimeType: 'image/png', data: Buffer.alloc(12 * 1024).toString('base64') }],
    }),
  },
  crash: {
    description: 'Exits the server process in the middle of the call.',
    inputSchema: object({}),
    run: async () => {
      record({ event: 'crash' });
      setTimeout(() => process.exit(3), 20);
      return new Promise(() => undefined);
    },
  },
  add_tool: {
    description: 'Adds the tool late_tool and says so (notifications/tools/list_changed).',
    inputSchema: object({}),
    run: async (_args, _extra, server) => {
      extraTools.add('late_tool');
      await server.sendToolListChanged();
      return { content: [{ type: 'text', text: 'late_tool added' }] };
    },
  },
  late_tool: {
    description: 'Only listed once add_tool was called.',
    inputSchema: object({}),
    run: async () => ({ content: [{ type: 'text', text: 'late hello' }] }),
  },
};

const extraTools = new Set();
const listed = (name) => name !== 'late_tool' || extraTools.has('late_tool');

export function createServer() {
  const server = new Server({ name: 'steerline-test-server', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: Object.entries(TOOLS)
      .filter(([name]) => listed(name))
      .map(([name, t]) => ({ name, description: t.description, inputSchema: t.inputSchema, ...(t.annotations ? { annotations: t.annotations } : {}) })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    const tool = TOOLS[name];
    record({ event: 'call', tool: name, args, requestId: extra.requestId });
    if (!tool || !listed(name)) return { isError: true, content: [{ type: 'text', text: `unknown tool ${name}` }] };
    return tool.run(args, extra, server);
  });
  return server;
}

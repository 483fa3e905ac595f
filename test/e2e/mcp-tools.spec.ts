import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkInvariants } from '@steerline/contracts';
import { type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { HttpMcpServer, McpScratch } from '../support/mcp/mcp-servers';
import { freePort, ServiceProcess } from '../support/processes';
import { startStack, steerWhileHeld, type Stack } from '../support/stack';

type Step = Record<string, unknown>;
const call = (name: string, args: Record<string, unknown> = {}) => ({ name, args });

/**
 * Tools from real MCP servers written with the official SDK (test/support/mcp):
 * `files` over stdio (the engine starts it), `web` over Streamable HTTP, `late`
 * an HTTP server that only comes up after the engine started, `private`,
 * offered to another tenant only, and `words`, the example in
 * examples/mcp-tool-server. Real turns over real NATS.
 */
describe('tools from MCP servers', () => {
  const scratch = new McpScratch();
  let stack: Stack;
  let web: HttpMcpServer;
  let late: HttpMcpServer | undefined;
  let latePort: number;

  beforeAll(async () => {
    web = new HttpMcpServer(await freePort(), scratch.eventsFile('web'));
    await web.ready();
    latePort = await freePort();
    const auth = { Authorization: 'Bearer test-token' };
    const config = scratch.writeConfig({
      files: scratch.stdioEntry('files'),
      web: { url: web.url, headers: auth },
      late: { url: `http://127.0.0.1:${latePort}/mcp`, headers: auth },
      private: scratch.stdioEntry('private', { tenants: ['another-tenant'] }),
      // The README's example, as shipped (run from the repository root, as npm start does).
      words: JSON.parse(readFileSync(join(__dirname, '../../examples/mcp-tool-server/mcp.json'), 'utf8')).mcpServers.words,
    });
    stack = await startStack({ env: { STEERLINE_MCP_CONFIG: config, STEERLINE_TOOL_TIMEOUT_MS: '3000' } });
  });
  afterAll(async () => {
    await stack?.close();
    await web?.stop();
    await late?.stop();
    scratch.remove();
  });

  async function startTurn(script: Step[], approvals?: { tools: string[] }) {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'use the MCP tools', model: { provider: 'scripted', script }, ...(approvals && { approvals }) });
    expect(res.status).toBe(202);
    return res.body.turnId as string;
  }
  const finished = (events: StoredEvent[]) => events.filter((e) => e.event.type === 'ToolCallFinished').map((e) => e.event.data as Record<string, any>);
  const toolStarted = (tid: string) => eventually(async () => (await stack.turnEvents(tid)).some((e) => e.event.type === 'ToolCallStarted') || undefined, 10_000, 'the tool call to start');

  it('offers every reachable server’s tools as mcp__<server>__<tool> with their input schemas, and starts although one server is down', async () => {
    const tid = await startTurn([{ text: 'looked' }]);
    await stack.turnEnded(tid);
    const offered = stack.model.requests.find((r) => r.messages[0]?.turnId === tid)!.tools;
    expect(offered).toContainEqual({
      name: 'mcp__files__read_file',
      description: 'Reads a file (a fixed text per path, for tests).',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    });
    const names = offered.map((t) => t.name);
    // `read.file` would also be mcp__files__read_file: the first listed keeps the name.
    expect(names.filter((n) => n === 'mcp__files__read_file')).toHaveLength(1);
    expect(names).toEqual(expect.arrayContaining(['sleep', 'mcp__files__slow', 'mcp__web__read_file', 'mcp__web__refuse']));
    // `late` does not answer yet; `private` is another tenant's.
    expect(names.filter((n) => n.startsWith('mcp__late__') || n.startsWith('mcp__private__') || n.endsWith('late_tool'))).toEqual([]);
    expect(stack.engine.service.mcpTools!.list('another-tenant').map((t) => t.spec.name)).toContain('mcp__private__read_file');
    // Up now: the engine's retries find it (see the list_changed test).
    late = new HttpMcpServer(latePort, scratch.eventsFile('late'));
    await late.ready();
  });

  it('a turn calls an MCP tool and gets its answer; a steer sent during the call is delivered right after its result', async () => {
    // The slow call waits for the test's approval, so the steer is surely sent during step 1's calls.
    const tid = await startTurn([{ tools: [call('mcp__files__read_file', { path: 'README.md' }), call('mcp__files__slow', { ms: 1000 })] }, { text: 'read it' }], { tools: ['mcp__files__slow'] });
    await toolStarted(tid);
    const steer = await steerWhileHeld(stack, tid, 'only the first section', 'call_1_1');
    expect(steer.status).toBe(200);
    expect(steer.body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2 });
    const events = await stack.turnEnded(tid);
    expect(finished(events)).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'mcp__files__read_file', ok: true, output: 'contents of README.md' }), expect.objectContaining({ name: 'mcp__files__slow', ok: true, output: 'waited 1000 ms' })]),
    );
    const types = events.map((e) => e.event.type);
    expect(types.lastIndexOf('ToolCallFinished')).toBe(types.indexOf('SteeringDelivered') - 1);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'Acknowledged: only the first section\nread it' } });
    await scratch.saw('files', { event: 'call', tool: 'read_file', args: { path: 'README.md' } });
    expect(checkInvariants(events, { requireSettled: true })).toEqual([]);
  });

  it('over Streamable HTTP: isError becomes an error result the model sees, and other content is summarised', async () => {
    const tid = await startTurn([{ tool: call('mcp__web__refuse', { message: 'no such file' }) }, { tool: call('mcp__web__picture') }, { text: 'fine' }]);
    const events = await stack.turnEnded(tid);
    const [refused, picture] = finished(events);
    expect(refused).toMatchObject({ ok: false, error: { code: 'tool_error', message: 'no such file' } });
    expect(picture).toMatchObject({ ok: true, output: 'a picture:\n[image: image/png, 12 KB]' });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'fine' } });
    const step2 = stack.model.requests.find((r) => r.messages[0]?.turnId === tid && r.step === 2)!;
    expect(step2.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Error: no such file' });
  });

  it('cancelling the turn cancels the calls on both servers (notifications/cancelled)', async () => {
    const tid = await startTurn([{ tools: [call('mcp__files__slow', { ms: 60_000 }), call('mcp__web__slow', { ms: 60_000 })] }]);
    const onFiles = await scratch.saw('files', { event: 'call', tool: 'slow', args: { ms: 60_000 } });
    const onWeb = await scratch.saw('web', { event: 'call', tool: 'slow', args: { ms: 60_000 } });
    expect((await stack.api('POST', `/turns/${tid}/cancel`)).status).toBe(202);
    await scratch.saw('files', { event: 'cancelled', requestId: onFiles.requestId, reason: 'Error: turn cancelled' });
    await scratch.saw('web', { event: 'cancelled', requestId: onWeb.requestId, reason: 'Error: turn cancelled' });
    expect((await stack.turnEnded(tid)).at(-1)!.event.type).toBe('TurnCancelled');
  });

  it('a call that outlives the tool timeout is an error result, and the server is told to stop', async () => {
    const tid = await startTurn([{ tool: call('mcp__web__slow', { ms: 20_000 }) }, { text: 'moved on' }]);
    const onWeb = await scratch.saw('web', { event: 'call', tool: 'slow', args: { ms: 20_000 } });
    const events = await stack.turnEnded(tid);
    expect(finished(events)[0]).toMatchObject({ ok: false, error: { code: 'tool_timeout' } });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'moved on' } });
    await scratch.saw('web', { event: 'cancelled', requestId: onWeb.requestId });
  });

  it('a stdio server that dies mid-call gives mcp_server_lost, the turn goes on, and the restarted server answers the next call', async () => {
    const before = scratch.events('files').filter((e) => e.event === 'started').length;
    const tid = await startTurn([{ tool: call('mcp__files__crash') }, { tool: call('mcp__files__read_file', { path: 'again' }), delayMs: 3000 }, { text: 'survived' }]);
    const events = await stack.turnEnded(tid, 20_000);
    const [lost, again] = finished(events);
    expect(lost).toMatchObject({ ok: false, error: { code: 'mcp_server_lost' } });
    expect(again).toMatchObject({ ok: true, output: 'contents of again' });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'survived' } });
    expect(scratch.events('files').filter((e) => e.event === 'started').length).toBe(before + 1);
  });

  it('takes tools added later (notifications/tools/list_changed) and servers that come up later (retried with backoff)', async () => {
    const tid = await startTurn([{ tool: call('mcp__web__add_tool') }, { text: 'added' }]);
    await stack.turnEnded(tid);
    await eventually(() => stack.engine.service.mcpTools!.get('mcp__web__late_tool', 'default'), 5000, 'the engine to offer late_tool');
    await eventually(() => stack.engine.service.mcpTools!.get('mcp__late__read_file', 'default'), 20_000, 'the engine to reach the late server');
    const tid2 = await startTurn([{ tools: [call('mcp__web__late_tool'), call('mcp__late__read_file', { path: 'x' })] }, { text: 'both' }]);
    expect(finished(await stack.turnEnded(tid2)).map((f) => f.output)).toEqual(expect.arrayContaining(['late hello', 'contents of x']));
  });

  it('the example MCP server answers with the file shipped next to it', async () => {
    const tid = await startTurn([{ tool: call('mcp__words__word_count', { text: 'one two  three' }) }, { text: 'counted' }]);
    expect(finished(await stack.turnEnded(tid))[0]).toMatchObject({ ok: true, output: '{"words":3}' });
    const updates: unknown[] = [];
    const echo = stack.engine.service.mcpTools!.get('mcp__words__slow_echo', 'default')!;
    const context = { tenantId: 'default', conversationId: 'c', turnId: 't', step: 1, toolCallId: 'call_1_0', progress: (u: unknown) => updates.push(u) };
    expect(await echo.run({ text: 'hi', ms: 1200 }, new AbortController().signal, context)).toBe('hi');
    // The SDK settles a call before it handles a progress notification that came in the same read, so the last may be missed.
    expect(updates[0]).toEqual({ progress: 1000 / 1200 });
    expect(updates.slice(1)).toEqual(updates.length > 1 ? [{ progress: 1 }] : []);
  });

  it('an HTTP server that restarted (and forgot the session) gets a new session, and the call is made in it', async () => {
    await web.stop();
    web = new HttpMcpServer(web.port, scratch.eventsFile('web'));
    await web.ready();
    const tid = await startTurn([{ tool: call('mcp__web__read_file', { path: 'after restart' }) }, { text: 'still there' }]);
    const events = await stack.turnEnded(tid);
    expect(finished(events)[0]).toMatchObject({ ok: true, output: 'contents of after restart' });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'still there' } });
  });

  it('passes an MCP server’s progress notifications to whoever listens for a call’s progress', async () => {
    const updates: { progress?: number; message?: string }[] = [];
    const tool = stack.engine.service.mcpTools!.get('mcp__files__slow', 'default')!;
    const context = { tenantId: 'default', conversationId: 'c', turnId: 't', step: 1, toolCallId: 'call_1_0', progress: (u: (typeof updates)[number]) => updates.push(u) };
    expect(await tool.run({ ms: 450 }, new AbortController().signal, context)).toBe('waited 450 ms');
    expect(updates.length).toBeGreaterThanOrEqual(2);
    expect(updates[0]).toEqual({ progress: 100 / 450, message: 'waited 100 ms' });
    expect(updates.map((u) => u.progress)).toEqual([...updates.map((u) => u.progress!)].sort((a, b) => a - b));
  });

  it('a stdio server gets only the environment the file gives it (and the SDK’s minimal set)', async () => {
    const started = scratch.events('files').find((e) => e.event === 'started')!;
    expect(started.env.filter((k: string) => !['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'].includes(k))).toEqual(['MCP_EVENTS']);
  });
});

describe('an MCP configuration the engine cannot use', () => {
  it('stops the engine at start with one line naming the problem', async () => {
    const scratch = new McpScratch();
    try {
      const config = scratch.writeConfig({ files: { command: 'node', url: 'http://127.0.0.1:1/mcp' } });
      const engine = new ServiceProcess('engine', { STEERLINE_MCP_CONFIG: config, NATS_URL: 'nats://127.0.0.1:1' });
      expect((await engine.finished).code).toBe(1);
      expect(engine.lines).toHaveLength(1);
      expect(engine.lines[0]).toContain(`STEERLINE_MCP_CONFIG ${config}: server \\"files\\" needs either \\"command\\" (stdio) or \\"url\\" (Streamable HTTP)`);
    } finally {
      scratch.remove();
    }
  });
});

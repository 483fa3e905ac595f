import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { Logger } from '@nestjs/common';
import { toolSubjects } from '@steerline/contracts';
import { ToolFailure, connectNats, encodeJson, serveTools, type ServedTool, type ToolServer } from '@steerline/runtime';
import { ToolError } from '../tool.registry';
import { RemoteToolDirectory } from './remote-tool.directory';
import { remoteTool } from './remote-tool';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const context = { tenantId: 'default', conversationId: 'c', turnId: 't', step: 1, toolCallId: 'call_1_0' };
const never = () => new AbortController().signal;
// NATS round trips to a tool service, and 1 s discovery windows: Jest's 5 s default is too close on a busy machine.
jest.setTimeout(30_000);

describe('remote tools over real NATS', () => {
  let nc: NatsConnection;
  const prefix = `rt${randomBytes(4).toString('hex')}`;
  const ts = toolSubjects(prefix);
  const servers: ToolServer[] = [];
  beforeAll(async () => {
    Logger.overrideLogger(false);
    nc = await connectNats(NATS_URL, 'remote-tool-spec');
  });
  afterEach(() => servers.splice(0).forEach((s) => s.stop()));
  afterAll(async () => {
    await nc.drain();
  });

  const serve = async (tools: ServedTool[]) => {
    const server = serveTools(nc, prefix, 'spec-tools', tools);
    servers.push(server);
    await server.ready;
    return server;
  };

  it('a tool’s output comes back as the call’s result, and the service gets the call’s context', async () => {
    const seen: unknown[] = [];
    await serve([{ descriptor: { name: 'add', parameters: { type: 'object' } }, run: (args, { call }) => (seen.push(call), Number(args.a) + Number(args.b)) }]);
    const tool = remoteTool(nc, ts, { name: 'add' }, 10_000);
    await expect(tool.run({ a: 2, b: 3 }, never(), context)).resolves.toBe(5);
    expect(seen).toEqual([expect.objectContaining({ ...context, args: { a: 2, b: 3 }, callId: expect.any(String) })]);
  });

  it('a service reports progress through the call’s progressTo, and the engine hands it on before the result', async () => {
    await serve([
      {
        descriptor: { name: 'crawl' },
        run: (_args, { progress }) => {
          progress(0.25, 'a quarter');
          progress(7, 'clamped');
          return 'crawled';
        },
      },
    ]);
    const reports: unknown[] = [];
    await expect(remoteTool(nc, ts, { name: 'crawl' }, 10_000).run({}, never(), { ...context, progress: (r) => reports.push(r) })).resolves.toBe('crawled');
    expect(reports).toEqual([
      { progress: 0.25, message: 'a quarter' },
      { progress: 1, message: 'clamped' },
    ]);
  });

  it('a typed failure keeps its code and whether it is fatal; any other throw is a non-fatal tool_failed', async () => {
    await serve([
      { descriptor: { name: 'deny' }, run: () => Promise.reject(new ToolFailure('forbidden', 'not for you', true)) },
      { descriptor: { name: 'crash' }, run: () => Promise.reject(new Error('boom')) },
    ]);
    await expect(remoteTool(nc, ts, { name: 'deny' }, 10_000).run({}, never(), context)).rejects.toMatchObject({ code: 'forbidden', message: 'not for you', fatal: true });
    await expect(remoteTool(nc, ts, { name: 'crash' }, 10_000).run({}, never(), context)).rejects.toMatchObject({ code: 'tool_failed', message: 'boom', fatal: false });
  });

  it('a reply that is not a tool reply is a non-fatal tool_bad_reply', async () => {
    const sub = nc.subscribe(ts.call('odd'), { callback: (_e, msg) => void msg.respond(encodeJson({ result: 'whatever' })) });
    try {
      const err = await remoteTool(nc, ts, { name: 'odd' }, 10_000).run({}, never(), context).catch((e) => e);
      expect(err).toBeInstanceOf(ToolError);
      expect(err).toMatchObject({ code: 'tool_bad_reply', fatal: false });
    } finally {
      sub.unsubscribe();
    }
  });

  it('an aborted call stops waiting at once and the service’s run is cancelled', async () => {
    let cancelled: unknown;
    let markStarted!: () => void;
    const started = new Promise<void>((r) => (markStarted = r));
    await serve([
      {
        descriptor: { name: 'wait' },
        run: (_args, { signal }) =>
          new Promise((_, reject) => {
            markStarted();
            signal.addEventListener('abort', () => ((cancelled = signal.reason), reject(signal.reason)));
          }),
      },
    ]);
    const controller = new AbortController();
    const running = remoteTool(nc, ts, { name: 'wait' }, 60_000).run({}, controller.signal, context);
    await started;
    controller.abort(new Error('turn cancelled'));
    await expect(running).rejects.toThrow('turn cancelled');
    for (let i = 0; i < 500 && !cancelled; i++) await new Promise((r) => setTimeout(r, 20));
    expect(cancelled).toMatchObject({ code: 'cancelled', message: 'turn cancelled' });
  });

  it('a describe round finds every running service’s tools, and a tool silent for three rounds is forgotten', async () => {
    const directory = new RemoteToolDirectory(nc, prefix, { callTimeoutMs: 10_000, discoveryIntervalMs: 3_600_000, discoveryWindowMs: 1_000 });
    const server = await serve([{ descriptor: { name: 'probe', description: 'Probes.', parameters: { type: 'object' } }, run: () => 'ok' }]);
    await directory.start();
    try {
      expect(directory.get('probe')?.spec).toEqual({ name: 'probe', description: 'Probes.', parameters: { type: 'object' } });
      server.stop();
      // Pretend three rounds went by without it.
      (directory as unknown as { known: Map<string, { seenAt: number }> }).known.get('probe')!.seenAt -= 3 * 3_600_000 + 1;
      await directory.refresh();
      expect(directory.has('probe')).toBe(false);
    } finally {
      directory.stop();
    }
  });
});

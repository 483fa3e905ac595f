import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidArgumentError } from '@nats-io/transport-node';
import { NATS_URL, uniquePrefix } from '../../../test/support/env';
import { SteerlineError, type ToolCallReply, toolSubjects } from '@steerline/contracts';
import { describeTools, serveTools } from './tool-service';
import { connectNats, request, serve } from './nats';
import { guardHandlers } from './process-guard';
import { maxPayload, publishSafely } from './safe-send';
import { decodeJson, encodeJson } from './nats';

const ask = (nc: NatsConnection, subject: string, body: unknown = {}, timeoutMs = 20_000) => request(nc, subject, body, { timeoutMs, noResponders: 'unavailable' });

describe('sends that fail never escape', () => {
  let server: NatsConnection;
  let client: NatsConnection;
  const errors: { err: unknown; subject: string }[] = [];
  const onError = (err: unknown, context: { subject: string }) => errors.push({ err, subject: context.subject });

  beforeAll(async () => {
    server = await connectNats(NATS_URL, 'safe-send-server');
    client = await connectNats(NATS_URL, 'safe-send-client');
  });
  afterAll(async () => {
    await client.close();
    if (!server.isClosed()) await server.close();
  });

  it('reads the limit from the server, not from an assumption', () => {
    expect(maxPayload(server)).toBe(server.info!.max_payload);
  });

  it('a responder whose answer is over max_payload answers payload_too_large and keeps serving', async () => {
    const subject = `${uniquePrefix()}.big`;
    const size = maxPayload(server) + 1;
    serve(server, subject, (body) => ((body as { big?: boolean }).big ? 'x'.repeat(size) : 'small'), { onError });
    await server.flush();
    await expect(ask(client, subject, { big: true })).rejects.toMatchObject({ code: 'payload_too_large', details: { maxPayload: maxPayload(server) } });
    await expect(ask(client, subject, { big: false })).resolves.toBe('small');
    expect(errors.some((e) => e.subject === subject && (e.err as SteerlineError).code === 'payload_too_large')).toBe(true);
  });

  it('an untyped handler error is reported with its subject, answered as internal, and the responder goes on', async () => {
    const subject = `${uniquePrefix()}.boom`;
    let calls = 0;
    serve(server, subject, () => {
      if (++calls === 1) throw new TypeError('unexpected');
      return 'fine';
    }, { onError });
    await server.flush();
    await expect(ask(client, subject)).rejects.toMatchObject({ code: 'internal' });
    await expect(ask(client, subject)).resolves.toBe('fine');
    expect(errors.find((e) => e.subject === subject)?.err).toBeInstanceOf(TypeError);
  });

  it('a request over max_payload is refused as payload_too_large before it is sent', async () => {
    await expect(ask(client, `${uniquePrefix()}.any`, { text: 'x'.repeat(maxPayload(client)) })).rejects.toMatchObject({ code: 'payload_too_large' });
  });

  it('a tool output over the bound reaches the engine cut, with its true size in the marker', async () => {
    const prefix = uniquePrefix();
    const tools = serveTools(server, prefix, 'big', [{ descriptor: { name: 'dump' }, run: () => '😀'.repeat(1_310_720) }]);
    await tools.ready;
    const call = { callId: 'c1', tenantId: 't', conversationId: 'c', turnId: 't', step: 1, toolCallId: 'call_1', args: {}, maxOutputBytes: 262_144 };
    const reply = decodeJson((await client.request(toolSubjects(prefix).call('dump'), encodeJson(call), { timeout: 20_000 })).data) as ToolCallReply;
    expect(reply.ok).toBe(true);
    const output = (reply as { output: string }).output;
    expect(output.endsWith('… [truncated: 5 242 880 bytes, limit 262 144]')).toBe(true);
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(262_144);
    expect((await describeTools(client, prefix, 1_000)).map((d) => d.service)).toEqual(['big']);
    tools.stop();
  }, 20_000);

  it('a reply on a closed connection is reported as unavailable, not thrown', async () => {
    const own = await connectNats(NATS_URL, 'safe-send-closing');
    const subject = `${uniquePrefix()}.slow`;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const asked = new Promise<void>((r) => (reached = r));
    const seen: unknown[] = [];
    serve(own, subject, () => (reached(), gate.then(() => 'late')), { onError: (err) => seen.push(err) });
    await own.flush();
    // Its reply never comes: the request runs out after 3 s.
    const pending = ask(client, subject, {}, 3000).catch((err: unknown) => err);
    // Closed while the handler holds the request: its reply has no connection left.
    await asked;
    await own.close();
    release();
    await expect(pending).resolves.toMatchObject({ code: 'unavailable' });
    expect(seen).toEqual([expect.objectContaining({ code: 'unavailable' })]);
    expect(publishSafely(own, subject, new Uint8Array(1))).toMatchObject({ code: 'unavailable' });
  }, 20_000);
});

describe('the process guard', () => {
  const run = () => {
    const lines: { level: string; entry: Record<string, unknown> }[] = [];
    const exits: number[] = [];
    const h = guardHandlers('test', { error: (entry) => lines.push({ level: 'error', entry }), fatal: (entry) => lines.push({ level: 'fatal', entry }) }, (c) => exits.push(c));
    return { ...h, lines, exits };
  };

  it('logs an unhandled rejection and goes on', () => {
    const g = run();
    g.onRejection(new Error('nobody waited'));
    expect(g.exits).toEqual([]);
    expect(g.lines[0]).toMatchObject({ level: 'error', entry: { service: 'test', error: 'nobody waited' } });
  });

  it('goes on after a send nats.js refused before writing, and exits for a restart after anything else', () => {
    const g = run();
    g.onException(InvalidArgumentError.format('payload', 'max_payload size exceeded'));
    expect(g.exits).toEqual([]);
    g.onException(new TypeError('state is unknown'));
    expect(g.exits).toEqual([1]);
    expect(g.lines.map((l) => l.level)).toEqual(['error', 'fatal']);
  });
});

import { uuidv7 } from '@steerline/contracts';
import { readSubject } from '@steerline/runtime';
import { SteerlineClient, SteerlineClientError, type StreamedEvent } from '@steerline/client';
import { startGateway, type RunningGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { jsonLogger } from '../../apps/gateway/src/logger';
import { eventually, NATS_URL } from '../support/env';
import { startStack, type Stack } from '../support/stack';

const sleep = (ms: number) => ({ tool: { name: 'sleep', args: { ms } } });

describe('the typed client against a real gateway', () => {
  let stack: Stack;
  let client: SteerlineClient;
  const logOf = (cid: string) => readSubject(stack.nats.js, stack.nats.jsm, stack.nats.s.stream, stack.nats.s.conversationEvents('default', cid));
  // A sleep that waits for approval holds step 1 until the test approves it, however slow the machine.
  const held = { tools: ['sleep'] };
  const logHas = (cid: string, what: string, has: (type: string, data: Record<string, unknown>) => boolean) =>
    eventually(async () => ((await logOf(cid)).some((e) => has(e.event.type, e.event.data as Record<string, unknown>)) ? true : undefined), 20_000, what);
  const failure = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err as SteerlineClientError);

  beforeAll(async () => {
    stack = await startStack();
    client = new SteerlineClient({ baseUrl: stack.url });
  });
  afterAll(() => stack?.close());

  it('approves and denies tool calls, edits a queued steer (sent with onTurnEnd and ttlMs) and queues a turn', async () => {
    const { id: cid } = await client.createConversation();
    const started = await client.startTurn(cid, {
      prompt: 'work',
      model: { provider: 'scripted', script: [{ tools: [{ name: 'sleep', args: { ms: 50 } }, { name: 'echo', args: { text: 'x' } }] }, { text: 'ok', delayMs: 300 }] },
      approvals: { tools: ['*'] },
    });
    expect(started.status).toBe('running');
    const queuedTurn = await client.startTurn(cid, { prompt: 'then this', model: { provider: 'scripted', script: [] }, whenBusy: 'queue' });
    expect(queuedTurn).toMatchObject({ status: 'queued', position: 1 });
    await eventually(async () => ((await logOf(cid)).some((e) => e.event.type === 'ToolApprovalRequested') ? true : undefined), 10_000, 'an approval request');
    const steer = await client.steer(started.turnId, 'first draft', { onTurnEnd: 'next_turn', ttlMs: 60_000 });
    expect(await client.editSteer(started.turnId, steer.steerId, 'second draft')).toMatchObject({ status: 'queued', text: 'second draft', position: 1 });
    expect(await client.approve(started.turnId, 'call_1_0')).toEqual({ toolCallId: 'call_1_0', decision: 'approved', by: 'user' });
    expect(await client.deny(started.turnId, 'call_1_1', 'no')).toEqual({ toolCallId: 'call_1_1', decision: 'denied', reason: 'no', by: 'user' });
    const late = await failure(client.deny(started.turnId, 'call_1_0'));
    expect(late).toMatchObject({ code: 'already_decided', status: 409, details: { decision: 'approved' } });
    // Delivered at step 1's tool boundary: a next_turn steer reaches this turn when a boundary comes first.
    const settled = await client.receipt(started.turnId, steer.steerId, { waitSeconds: 10 });
    expect(settled).toMatchObject({ status: 'delivered', text: 'second draft' });
  });

  it('answers steers as delivered, queued and dropped receipts, one union type', async () => {
    const { id: cid } = await client.createConversation();
    const { turnId } = await client.startTurn(cid, { prompt: 'work', model: { provider: 'scripted', script: [sleep(10), { text: 'ok' }] }, approvals: held });
    await logHas(cid, 'an approval request', (type) => type === 'ToolApprovalRequested');

    const queued = await client.steer(turnId, 'later, maybe');
    expect(queued).toMatchObject({ status: 'queued', position: 1, text: 'later, maybe', turnId });
    const withdrawn = await client.withdraw(turnId, queued.steerId);
    expect(withdrawn).toMatchObject({ status: 'dropped', reason: 'withdrawn', text: 'later, maybe' });
    // Read back (once projected) with a wait: the API's 409 steer_dropped is a receipt here, not an error.
    await stack.settled();
    const read = await client.receipt(turnId, queued.steerId, { waitSeconds: 30 });
    expect(read).toMatchObject({ status: 'dropped', reason: 'withdrawn', steerId: queued.steerId });

    const steerId = uuidv7();
    const delivering = client.steerConversation(cid, 'go left', { waitSeconds: 30, steerId, expectedTurnId: turnId });
    await logHas(cid, 'the steer queued', (type, data) => type === 'SteerQueued' && data.steerId === steerId);
    await client.approve(turnId, 'call_1_0');
    const delivered = await delivering;
    expect(delivered.status).toBe('delivered');
    if (delivered.status === 'delivered') expect(delivered).toMatchObject({ steerId, step: 1, boundary: 'tool_results', requestStep: 2 });

    await eventually(async () => ((await client.getTurn(turnId).catch(() => undefined))?.status === 'completed' ? true : undefined), 20_000, 'completion');
    await stack.settled();
    const conversation = await client.getConversation(cid);
    expect(conversation.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['work', 'go left']);
    expect((await client.getConversation(cid, { afterMessage: 1, limit: 1 })).messages).toHaveLength(1);
  });

  it('throws SteerlineClientError with the API’s code for refusals', async () => {
    const { id: cid } = await client.createConversation();
    // Running until the cancel below, however long the refusals take: its call waits for an approval.
    const { turnId } = await client.startTurn(cid, { prompt: 'work', model: { provider: 'scripted', script: [sleep(10), { text: 'ok' }] }, approvals: held });
    expect(await failure(client.steer(turnId, '   '))).toMatchObject({ name: 'SteerlineClientError', code: 'invalid_request', status: 400 });
    expect(await failure(client.steerConversation(cid, 'x', { expectedTurnId: uuidv7() }))).toMatchObject({ code: 'turn_moved_on', status: 409 });
    expect(await failure(client.startTurn(cid, { prompt: 'again' }))).toMatchObject({ code: 'turn_already_running', status: 409 });
    expect(await failure(client.getTurn(uuidv7()))).toMatchObject({ code: 'not_found', status: 404 });
    expect(await failure(client.events(uuidv7()).next())).toMatchObject({ code: 'not_found' });

    await client.cancel(turnId, 'changed my mind');
    await eventually(async () => ((await client.getTurn(turnId).catch(() => undefined))?.status === 'cancelled' ? true : undefined), 20_000, 'the cancel');
    expect(await failure(client.steer(turnId, 'too late'))).toMatchObject({ code: 'turn_not_running', status: 409 });
    const offline = new SteerlineClient({ baseUrl: 'http://127.0.0.1:9' });
    expect(await failure(offline.createConversation())).toBeInstanceOf(SteerlineClientError);
  });

  it('events() replays and follows a turn live, and resumes by itself across a gateway restart with no gap and no duplicate', async () => {
    const start = (port: string) => startGateway(loadGatewayConfig({ NATS_URL, STEERLINE_PREFIX: stack.prefix, PORT: port }), { logger: jsonLogger(['error']) });
    let gateway: RunningGateway | undefined = await start('0');
    const port = new URL(gateway.url).port;
    try {
      const viaGateway = new SteerlineClient({ baseUrl: gateway.url });
      const { id: cid } = await client.createConversation();
      await client.startTurn(cid, { prompt: 'work', model: { provider: 'scripted', script: [sleep(600), sleep(300), { text: 'ok' }] } });
      const seen: StreamedEvent[] = [];
      const controller = new AbortController();
      let restarted = false;
      for await (const e of viaGateway.events(cid, { signal: controller.signal, reconnectDelayMs: 50, maxReconnects: 100 })) {
        seen.push(e);
        if (e.type === 'ToolCallStarted' && !restarted) {
          restarted = true;
          // The stream drops under the client's feet; the same address comes back a moment later.
          await gateway!.close();
          gateway = undefined;
          setTimeout(() => void start(port).then((g) => (gateway = g)), 200);
        }
        if (e.type === 'TurnCompleted') controller.abort();
      }
      expect(restarted).toBe(true);
      const log = await logOf(cid);
      expect(seen.map((e) => [e.id, e.type])).toEqual(log.map((e) => [e.streamSeq, e.event.type]));
      expect(seen.map((e) => e.event)).toEqual(log.map((e) => e.event));
    } finally {
      await eventually(() => gateway, 3_000, 'the restarted gateway').catch(() => undefined);
      await gateway?.close();
    }
  });
});

import { SteerlineClient, readSse, type ExternalTurn, type SseMessage } from '@steerline/client';
import { auditLog, request, type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { startStack, steerWhileHeld, type Stack } from '../support/stack';

const typesOf = (events: StoredEvent[]) => events.map((e) => e.event.type);
const sleepCall = { id: 'call_1_0', name: 'sleep', args: { ms: 10 } };

/** External turns (docs/runner-protocol.md), driven with the client's runner API and no framework. */
describe('external turns', () => {
  let stack: Stack;
  let client: SteerlineClient;
  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_RUNNER_LEASE_MS: '3000' } });
    client = new SteerlineClient({ baseUrl: stack.url });
  });
  afterAll(() => stack?.close());

  const conversation = async () => (await client.createConversation()).id;
  const steerQueued = (tid: string, text: string) => stack.turnHas(tid, 'SteerQueued', { where: (d) => d.text === text });
  async function audit(cid: string) {
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { tenantId: 'default', conversationId: cid, requireSettled: true });
    expect(report.violations).toEqual([]);
  }

  it('a steer sent during a step reaches the runner after its tool results, with the same events and receipt as the engine’s own turn', async () => {
    // The engine's own turn: its call waits for approval, so the steer surely lands in step 1.
    const internalCid = await conversation();
    const script = [{ tool: { name: 'sleep', args: { ms: 10 } } }, { text: 'done' }];
    const internal = (await stack.api('POST', `/conversations/${internalCid}/turns`, { prompt: 'go', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'] } })).body.turnId as string;
    const internalReceipt = await steerWhileHeld(stack, internal, 'use tabs');
    const internalEvents = await stack.turnEnded(internal);

    const cid = await conversation();
    const turn = await client.startExternalTurn(cid, { prompt: 'go', approvals: { tools: ['sleep'] } });
    expect(turn.leaseMs).toBe(3000);
    const tools = await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
    expect(tools).toEqual({ next: 'tools', step: 1, calls: [{ toolCallId: 'call_1_0', name: 'sleep', approval: 'pending', finished: false }] });
    const decision = turn.approval(sleepCall);
    const receipt = stack.api('POST', `/turns/${turn.turnId}/steers`, { text: 'use tabs' }, { Prefer: 'wait=30' });
    await steerQueued(turn.turnId, 'use tabs');
    expect((await stack.api('POST', `/turns/${turn.turnId}/approvals/call_1_0`, { decision: 'approve' })).status).toBe(200);
    expect(await decision).toEqual({ toolCallId: 'call_1_0', decision: 'approved', by: 'user' });
    const next = await turn.reportResults(1, [{ toolCallId: 'call_1_0', ok: true, output: 'slept 10 ms', durationMs: 10 }]);
    expect(next).toEqual({ next: 'model', step: 2, steers: [{ steerId: expect.any(String), text: 'use tabs', rendered: expect.stringContaining('use tabs'), position: 1 }] });
    // Write-ahead: the runner holds the steer only once its delivery is in the log.
    expect(typesOf(await stack.turnEvents(turn.turnId)).slice(-2)).toEqual(['SteeringDelivered', 'ModelRequested']);
    expect(await turn.reportAnswer({ step: 2, text: 'done', toolCalls: [] })).toEqual({ next: 'end', status: 'completed' });
    await expect(turn.ended).resolves.toEqual({ next: 'end', status: 'completed' });
    expect(turn.signal.aborted).toBe(false);

    const events = await stack.turnEnded(turn.turnId);
    expect(typesOf(events)).toEqual(typesOf(internalEvents));
    expect(events[0].event.data).toMatchObject({ runner: 'external', leaseDigest: expect.stringMatching(/^[0-9a-f]{64}$/), model: { provider: 'openai', name: 'external' } });
    const strip = ({ steerId: _s, turnId: _t, ...rest }: Record<string, unknown>) => rest;
    expect(strip((await receipt).body)).toEqual(strip(internalReceipt.body));
    expect((await receipt).body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2 });
    await audit(cid);
  });

  it('started over NATS and taken up by lease: the cap, FIFO, withdraw, edit and expiry decide which steers the runner gets', async () => {
    const cid = await conversation();
    const started = await request<{ turnId: string; lease: { token: string; leaseMs: number } }>(
      stack.nats.nc,
      stack.nats.s.startTurn,
      { tenantId: 'default', conversationId: cid, prompt: 'go', runner: 'external', limits: { maxQueued: 4 } },
      { timeoutMs: 5_000, noResponders: 'unavailable' },
    );
    expect(started).toMatchObject({ status: 'running', lease: { token: expect.any(String), leaseMs: 3000 } });
    const turn = client.attachExternalTurn(started.turnId, started.lease);
    await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
    const [a, b, c] = [await client.steer(turn.turnId, 'first'), await client.steer(turn.turnId, 'second'), await client.steer(turn.turnId, 'third')];
    const expiring = await client.steer(turn.turnId, 'soon gone', { ttlMs: 1_000 });
    await expect(client.steer(turn.turnId, 'one too many')).rejects.toMatchObject({ code: 'queue_full', status: 429 });
    await client.withdraw(turn.turnId, b.steerId);
    await client.editSteer(turn.turnId, c.steerId, 'third, edited');
    await stack.turnHas(turn.turnId, 'SteerDropped', { where: (d) => d.steerId === expiring.steerId && d.reason === 'expired' });
    const next = await turn.reportResults(1, [{ toolCallId: 'call_1_0', ok: true, output: 'ok' }]);
    expect(next).toMatchObject({ next: 'model', step: 2 });
    if (next.next !== 'model') throw new Error('no request');
    expect(next.steers.map((x) => [x.steerId, x.text, x.position])).toEqual([
      [a.steerId, 'first', 1],
      [c.steerId, 'third, edited', 3],
    ]);
    expect(await turn.reportAnswer({ step: 2, text: 'done', toolCalls: [] })).toEqual({ next: 'end', status: 'completed' });
    await audit(cid);
  });

  it('a text-only answer continues with the queued steers, up to maxContinuations; what is left is dropped continuation_cap', async () => {
    const cid = await conversation();
    const turn = await client.startExternalTurn(cid, { prompt: 'go', limits: { maxContinuations: 1 } });
    const first = await client.steer(turn.turnId, 'and the docs');
    const continued = await turn.reportAnswer({ step: 1, text: 'done?', toolCalls: [], usage: { inputTokens: 3, outputTokens: 2 } });
    expect(continued).toMatchObject({ next: 'model', step: 2, steers: [{ steerId: first.steerId, text: 'and the docs' }] });
    const second = await client.steer(turn.turnId, 'and the tests');
    expect(await turn.reportAnswer({ step: 2, text: 'done', toolCalls: [] })).toEqual({ next: 'end', status: 'completed' });
    expect(await client.receipt(turn.turnId, first.steerId, { waitSeconds: 5 })).toMatchObject({ status: 'delivered', boundary: 'turn_end', requestStep: 2 });
    expect(await client.receipt(turn.turnId, second.steerId, { waitSeconds: 5 })).toMatchObject({ status: 'dropped', reason: 'continuation_cap', text: 'and the tests' });
    await audit(cid);
  });

  it('a cancel from any client aborts the runner’s signal within a round trip of the engine’s answer; reports after it are refused', async () => {
    const cid = await conversation();
    const turn = await client.startExternalTurn(cid, { prompt: 'go' });
    await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
    const steer = await client.steer(turn.turnId, 'never read');
    const aborted = new Promise<number>((resolve) => turn.signal.addEventListener('abort', () => resolve(performance.now())));
    const sent = performance.now();
    await client.cancel(turn.turnId, 'user changed their mind');
    const latencyMs = (await aborted) - sent;
    expect(latencyMs).toBeLessThan(2_000);
    await expect(turn.ended).resolves.toEqual({ next: 'end', status: 'cancelled', reason: 'user changed their mind' });
    expect(await client.receipt(turn.turnId, steer.steerId, { waitSeconds: 5 })).toMatchObject({ status: 'dropped', reason: 'turn_cancelled' });
    const before = (await stack.turnEvents(turn.turnId)).length;
    await expect(turn.reportResults(1, [{ toolCallId: 'call_1_0', ok: true, output: 'late' }])).rejects.toMatchObject({ code: 'turn_not_running', status: 409 });
    expect((await stack.turnEvents(turn.turnId)).length).toBe(before);
    await audit(cid);
  });

  it('a denied call’s result is the decider’s: the runner waits, learns the denial, and reads the next request from an empty report', async () => {
    const cid = await conversation();
    const turn = await client.startExternalTurn(cid, { prompt: 'go', approvals: { tools: ['sleep'] } });
    await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
    const decision = turn.approval('call_1_0');
    await stack.turnHas(turn.turnId, 'ToolApprovalRequested');
    await client.deny(turn.turnId, 'call_1_0', 'not now');
    expect(await decision).toEqual({ toolCallId: 'call_1_0', decision: 'denied', reason: 'not now', by: 'user' });
    expect(await turn.reportResults(1, [])).toEqual({ next: 'model', step: 2, steers: [] });
    const finished = (await stack.turnEvents(turn.turnId)).find((e) => e.event.type === 'ToolCallFinished')!;
    expect(finished.event.data).toMatchObject({ ok: false, error: { code: 'denied' } });
    await turn.fail('agent_crashed', 'the agent threw');
    const events = await stack.turnEnded(turn.turnId);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnFailed', data: { error: { code: 'agent_crashed', message: 'the agent threw' } } });
    await audit(cid);
  });

  it('the runner’s text deltas and tool progress reach SSE watchers as ModelDelta and ToolProgress, numbered by the engine', async () => {
    const cid = await conversation();
    const controller = new AbortController();
    const res = await fetch(`${stack.url}/v1/conversations/${cid}/events`, { signal: controller.signal });
    const seen: SseMessage[] = [];
    const reading = (async () => {
      for await (const m of readSse(res.body!)) {
        seen.push(m);
        if (m.event === 'TurnCompleted') break;
      }
    })().catch(() => undefined);
    const turn = await client.startExternalTurn(cid, { prompt: 'go' });
    await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
    turn.publishProgress(1, 'call_1_0', { progress: 0.5, message: 'half way' });
    await turn.flush();
    await turn.reportResults(1, [{ toolCallId: 'call_1_0', ok: true, output: 'ok' }]);
    turn.publishDelta(2, 'Hel');
    turn.publishDelta(2, 'lo');
    await turn.reportAnswer({ step: 2, text: 'Hello', toolCalls: [] });
    await eventually(async () => (seen.some((m) => m.event === 'TurnCompleted') ? true : undefined), 10_000, 'the stream to reach the end');
    controller.abort();
    await reading;
    const live = seen.filter((m) => m.event === 'ModelDelta' || m.event === 'ToolProgress').map((m) => ({ event: m.event, ...JSON.parse(m.data) }));
    expect(live).toEqual([
      { event: 'ToolProgress', type: 'ToolProgress', turnId: turn.turnId, step: 1, toolCallId: 'call_1_0', progress: 0.5, message: 'half way' },
      { event: 'ModelDelta', type: 'ModelDelta', turnId: turn.turnId, step: 2, index: 0, text: 'Hel' },
      { event: 'ModelDelta', type: 'ModelDelta', turnId: turn.turnId, step: 2, index: 1, text: 'lo' },
    ]);
  });

  it('a steer that would move to a next turn is refused with nothing appended: nobody would run the follow-up', async () => {
    const cid = await conversation();
    const turn = await client.startExternalTurn(cid, { prompt: 'go' });
    const before = (await stack.turnEvents(turn.turnId)).length;
    const res = await stack.api('POST', `/turns/${turn.turnId}/steers`, { text: 'later', onTurnEnd: 'next_turn' });
    expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: 'invalid_request' });
    expect(res.body.error.message).toContain('next turn');
    expect(await stack.turnEvents(turn.turnId)).toHaveLength(before);
    expect((await stack.api('POST', `/turns/${turn.turnId}/steers`, { text: 'at the end', onTurnEnd: 'drop' })).status).toBe(202);
    expect(await turn.reportAnswer({ step: 1, text: 'done', toolCalls: [] })).toEqual({ next: 'end', status: 'completed' });
    await audit(cid);
  });

  it('a runner that stops renewing loses the turn: runner_lost within the lease, its queued steers dropped with their text', async () => {
    const cid = await conversation();
    const turn = await client.startExternalTurn(cid, { prompt: 'go' });
    await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
    const steer = await client.steer(turn.turnId, 'keep this text');
    const stopped = performance.now();
    turn.close();
    const events = await stack.turnEnded(turn.turnId, 10_000);
    expect(performance.now() - stopped).toBeLessThan(3000 + 2000);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnFailed', data: { error: { code: 'runner_lost' } } });
    expect(await client.receipt(turn.turnId, steer.steerId, { waitSeconds: 5 })).toMatchObject({ status: 'dropped', reason: 'turn_failed', text: 'keep this text' });
    await audit(cid);
  });

  describe('refusals: a typed 4xx, nothing appended', () => {
    let turn: ExternalTurn;
    let lease: string;
    beforeAll(async () => {
      turn = await client.startExternalTurn(await conversation(), { prompt: 'go' });
      lease = turn.leaseToken;
    });
    afterAll(() => turn.fail('test_done', 'the refusal tests are over').catch(() => undefined));

    async function refused(path: string, body: unknown, status: number, code: string, tid = turn.turnId) {
      const before = (await stack.turnEvents(turn.turnId)).length;
      const res = await stack.api('POST', `/turns/${tid}/runner/${path}`, body);
      expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
      expect((await stack.turnEvents(turn.turnId)).length).toBe(before);
    }

    it('an answer for a step that was never requested', () => refused('answer', { lease, step: 2, text: 'hi', toolCalls: [] }, 400, 'invalid_request'));
    it('an answer whose calls share an id, or have one no route can name', async () => {
      await refused('answer', { lease, step: 1, text: '', toolCalls: [sleepCall, sleepCall] }, 400, 'invalid_request');
      await refused('answer', { lease, step: 1, text: '', toolCalls: [{ ...sleepCall, id: 'call 1' }] }, 400, 'invalid_request');
    });
    it('results before any answer, and for calls the answer never made', async () => {
      await refused('results', { lease, step: 1, results: [{ toolCallId: 'call_1_0', ok: true }] }, 400, 'invalid_request');
      await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
      await refused('results', { lease, step: 1, results: [{ toolCallId: 'call_1_0', ok: true }, { toolCallId: 'nope', ok: true }] }, 400, 'invalid_request');
      await refused('answer', { lease, step: 1, text: 'again', toolCalls: [] }, 400, 'invalid_request');
    });
    it('a runner that does not hold the lease', async () => {
      await refused('answer', { lease: 'A'.repeat(43), step: 1, text: 'hi', toolCalls: [] }, 403, 'not_lease_holder');
      await refused('lease', { lease: 'A'.repeat(43) }, 403, 'not_lease_holder');
      await refused('answer', { step: 1, text: 'hi', toolCalls: [] }, 400, 'invalid_request');
    });
    it('a client of another tenant', async () => {
      const before = (await stack.turnEvents(turn.turnId)).length;
      const other = request(stack.nats.nc, stack.nats.s.runnerResults(turn.turnId), { tenantId: 'other', lease, step: 1, results: [{ toolCallId: 'call_1_0', ok: true }] }, { timeoutMs: 5_000, noResponders: 'turn_not_running' });
      await expect(other).rejects.toMatchObject({ code: 'not_found' });
      expect((await stack.turnEvents(turn.turnId)).length).toBe(before);
    });
    it('a report for a turn the engine runs itself', async () => {
      const cid = await conversation();
      const own = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 10 } } }, { text: 'ok' }] }, approvals: { tools: ['sleep'] } })).body.turnId;
      await stack.turnHas(own, 'ToolApprovalRequested');
      const before = (await stack.turnEvents(own)).length;
      const res = await stack.api('POST', `/turns/${own}/runner/results`, { lease, step: 1, results: [{ toolCallId: 'call_1_0', ok: true }] });
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: 'invalid_request' });
      expect((await stack.turnEvents(own)).length).toBe(before);
      await client.cancel(own);
    });
    it('an external turn cannot be queued', async () => {
      const cid = await conversation();
      const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', runner: 'external', whenBusy: 'queue' });
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: 'invalid_request' });
    });
    it('a report for a turn that has ended', async () => {
      const ended = await client.startExternalTurn(await conversation(), { prompt: 'go' });
      await ended.reportAnswer({ step: 1, text: 'bye', toolCalls: [] });
      const before = (await stack.turnEvents(ended.turnId)).length;
      const res = await stack.api('POST', `/turns/${ended.turnId}/runner/answer`, { lease: ended.leaseToken, step: 2, text: 'more', toolCalls: [] });
      expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 409, code: 'turn_not_running' });
      expect((await stack.turnEvents(ended.turnId)).length).toBe(before);
    });
  });
});

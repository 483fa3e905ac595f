import { uuidv7 } from '@steerline/contracts';
import { auditLog, type StoredEvent } from '@steerline/runtime';
import { approvalRequested, approve, startStack, steerSafely, steerWhileHeld, type Stack } from '../support/stack';

type Step = Record<string, unknown>;
const sleep = (ms: number): Step => ({ tool: { name: 'sleep', args: { ms } } });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('every steering rule, through HTTP', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  async function startTurn(script: Step[], limits?: Record<string, number>, approvals?: Record<string, unknown>) {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script }, ...(limits ? { limits } : {}), ...(approvals ? { approvals } : {}) });
    expect(res.status).toBe(202);
    return { cid, tid: res.body.turnId as string };
  }
  // A call waiting for approval holds its step until the test approves it, so a steer sent
  // meanwhile lands in that step however slow the machine is (docs/design.md §9).
  const held = { tools: ['sleep'] };
  const steer = (tid: string, text: string, extra: Record<string, unknown> = {}, wait = 0) =>
    stack.api('POST', `/turns/${tid}/steers`, { text, ...extra }, wait ? { Prefer: `wait=${wait}` } : {});
  const ended = (tid: string) => stack.turnEnded(tid);
  const settlementsOf = (events: StoredEvent[], steerId: string) =>
    events.filter((e) => (e.event.type === 'SteeringDelivered' || e.event.type === 'SteerDropped') && e.event.data.steerId === steerId);

  it('one steer over the queue cap gets 429 queue_full and appends nothing', async () => {
    const { tid } = await startTurn([sleep(10)], { maxQueued: 2 }, held);
    await approvalRequested(stack, tid, 'call_1_0');
    expect((await steer(tid, 'one')).status).toBe(202);
    expect((await steer(tid, 'two')).status).toBe(202);
    const full = await steer(tid, 'three');
    expect(full.status).toBe(429);
    expect(full.body.error.code).toBe('queue_full');
    await approve(stack, tid, 'call_1_0');
    const events = await ended(tid);
    expect(events.filter((e) => e.event.type === 'SteerQueued')).toHaveLength(2);
  });

  it('a queued steer is withdrawn with its text handed back; a delivered one answers 409 already_delivered', async () => {
    const { tid } = await startTurn([sleep(10), sleep(10)], undefined, held);
    await approvalRequested(stack, tid, 'call_1_0');
    const queued = await steer(tid, 'forget this');
    expect(queued.status).toBe(202);
    const withdrawn = await stack.api('DELETE', `/turns/${tid}/steers/${queued.body.steerId}`);
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body).toMatchObject({ status: 'dropped', reason: 'withdrawn', text: 'forget this', position: 1 });

    const delivered = await steerWhileHeld(stack, tid, 'keep this');
    expect(delivered.status).toBe(200);
    // Step 2's call still waits for approval: the turn is running when the withdrawal comes.
    await approvalRequested(stack, tid, 'call_2_0');
    const late = await stack.api('DELETE', `/turns/${tid}/steers/${delivered.body.steerId}`);
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('already_delivered');
    await approve(stack, tid, 'call_2_0');
    const events = await ended(tid);
    expect(settlementsOf(events, queued.body.steerId).map((e) => e.event.type)).toEqual(['SteerDropped']);
  });

  it('cancel answers 202, aborts the running tool and drops queued steers turn_cancelled before TurnCancelled', async () => {
    const { tid } = await startTurn([sleep(30_000)]);
    await stack.turnHas(tid, 'ToolCallStarted');
    const a = await steer(tid, 'first');
    const b = await steer(tid, 'second');
    const waiting = stack.api('GET', `/turns/${tid}/steers/${a.body.steerId}`, undefined, { Prefer: 'wait=10' });
    const started = Date.now();
    const cancel = await stack.api('POST', `/turns/${tid}/cancel`, { reason: 'user changed their mind' });
    expect(cancel.status).toBe(202);
    const events = await ended(tid);
    // Far below the tool's 30 s: the cancel aborted it rather than waiting for it.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(events.slice(-3).map((e) => [e.event.type, (e.event.data as { reason?: string }).reason])).toEqual([
      ['SteerDropped', 'turn_cancelled'],
      ['SteerDropped', 'turn_cancelled'],
      ['TurnCancelled', 'user changed their mind'],
    ]);
    expect(events.some((e) => e.event.type === 'ToolCallFinished')).toBe(false);
    const receipt = await waiting;
    expect(receipt.status).toBe(409);
    expect(receipt.body.error).toMatchObject({ code: 'steer_dropped', reason: 'turn_cancelled', steerId: a.body.steerId, text: 'first' });
    expect(b.status).toBe(202);
  });

  it('a fatal tool failure fails the turn, and a waiting steer gets 409 steer_dropped turn_failed with its text', async () => {
    const { tid } = await startTurn([sleep(10), { tool: { name: 'fail', args: { message: 'disk full' } } }], undefined, { tools: ['*'] });
    const res = await steerWhileHeld(stack, tid, 'hurry');
    expect(res.status).toBe(200);
    const next = await steerWhileHeld(stack, tid, 'too late for step 2', 'call_2_0');
    expect(next.status).toBe(409);
    expect(next.body.error).toMatchObject({ code: 'steer_dropped', reason: 'turn_failed', text: 'too late for step 2' });
    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnFailed', data: { error: { code: 'tool_failed' } } });
  });

  it('maxSteps ends the turn and drops queued steers max_steps', async () => {
    const { tid } = await startTurn([sleep(10), sleep(10)], { maxSteps: 1 }, held);
    const res = await steerWhileHeld(stack, tid, 'more');
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'steer_dropped', reason: 'max_steps' });
    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnFailed', data: { error: { code: 'max_steps' } } });
  });

  it('steers queued at a text-only answer are delivered at turn_end and the model answers again; past the cap they drop continuation_cap', async () => {
    // A text-only answer cannot wait for an approval: each answer takes 2.5 s, ample for one
    // HTTP round trip on a loaded machine, and each steer is sent once its answer is under way.
    const { tid } = await startTurn([{ text: 'first answer', delayMs: 2500 }, { text: 'second answer', delayMs: 2500 }], { maxContinuations: 1 });
    const a = await steer(tid, 'also check the docs', {}, 30);
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: 'delivered', boundary: 'turn_end', step: 1, requestStep: 2 });
    const b = await steer(tid, 'and the changelog', {}, 30);
    expect(b.status).toBe(409);
    expect(b.body.error).toMatchObject({ code: 'steer_dropped', reason: 'continuation_cap', text: 'and the changelog' });
    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'Acknowledged: also check the docs\nsecond answer' } });
  });

  it('a conversation steer reaches the running turn; a stale expectedTurnId gets 409 turn_moved_on; a second turn 409 turn_already_running', async () => {
    const { cid, tid } = await startTurn([sleep(10)], undefined, held);
    await approvalRequested(stack, tid, 'call_1_0');
    const second = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'another' });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('turn_already_running');
    const ok = await stack.api('POST', `/conversations/${cid}/steers`, { text: 'by conversation', expectedTurnId: tid });
    expect(ok.status).toBe(202);
    expect(ok.body.turnId).toBe(tid);
    const moved = await stack.api('POST', `/conversations/${cid}/steers`, { text: 'wrong turn', expectedTurnId: uuidv7() });
    expect(moved.status).toBe(409);
    expect(moved.body.error.code).toBe('turn_moved_on');
    await approve(stack, tid, 'call_1_0');
    await ended(tid);
    const idle = await stack.api('POST', `/conversations/${cid}/steers`, { text: 'nobody runs' });
    expect(idle.status).toBe(409);
    expect(idle.body.error.code).toBe('turn_not_running');
  });

  it('a resubmitted steerId returns the same receipt and appends nothing; equal texts are two steers', async () => {
    const { tid } = await startTurn([sleep(10)], undefined, held);
    await approvalRequested(stack, tid, 'call_1_0');
    const steerId = uuidv7();
    const first = await steer(tid, 'same id', { steerId });
    const again = await steer(tid, 'same id', { steerId });
    expect(first.status).toBe(202);
    expect(again.body).toEqual(first.body);
    const twin1 = await steer(tid, 'twin');
    const twin2 = await steer(tid, 'twin');
    expect(twin1.body.steerId).not.toBe(twin2.body.steerId);
    expect([twin1.body.position, twin2.body.position]).toEqual([2, 3]);
    await approve(stack, tid, 'call_1_0');
    const events = await ended(tid);
    expect(events.filter((e) => e.event.type === 'SteerQueued' && e.event.data.steerId === steerId)).toHaveLength(1);
    await stack.settled();
    const afterEnd = await steer(tid, 'same id', { steerId });
    expect(afterEnd.status).toBe(200);
    expect(afterEnd.body).toMatchObject({ steerId, status: 'delivered', position: 1 });
  });

  it('GET a receipt with Prefer: wait long-polls until the steer is delivered', async () => {
    const { tid } = await startTurn([sleep(10)], undefined, held);
    await approvalRequested(stack, tid, 'call_1_0');
    const queued = await steer(tid, 'poll me');
    expect(queued.status).toBe(202);
    const polling = stack.api('GET', `/turns/${tid}/steers/${queued.body.steerId}`, undefined, { Prefer: 'wait=30' });
    await approve(stack, tid, 'call_1_0');
    const receipt = await polling;
    expect(receipt.status).toBe(200);
    expect(receipt.body).toMatchObject({ steerId: queued.body.steerId, turnId: tid, status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2, text: 'poll me' });
  });

  it('a delivered steer is its own user message carrying afterToolCallIds and the rendered text, never inside a tool result', async () => {
    const { tid } = await startTurn([{ tools: [{ name: 'echo', args: { text: 'a' } }, { name: 'sleep', args: { ms: 10 } }] }], undefined, held);
    const res = await steerWhileHeld(stack, tid, 'after both tools', 'call_1_1');
    expect(res.status).toBe(200);
    const events = await ended(tid);
    const delivered = events.find((e) => e.event.type === 'SteeringDelivered')!.event;
    expect(delivered.data).toMatchObject({ afterToolCallIds: expect.arrayContaining(['call_1_0', 'call_1_1']), rendered: 'after both tools', requestStep: 2 });
    const request = stack.model.requests.find((r) => r.messages.some((m) => m.role === 'user' && m.content === 'after both tools'))!;
    expect(request.messages.filter((m) => m.role === 'tool').every((m) => !m.content.includes('after both tools'))).toBe(true);
    expect(request.messages.at(-1)).toMatchObject({ role: 'user', content: 'after both tools', steerId: res.body.steerId });
  });

  it('steers fired concurrently across the moment a turn ends each get exactly one terminal event, or an error and none', async () => {
    for (let round = 0; round < 3; round++) {
      const { tid } = await startTurn([{ text: 'end', delayMs: 300 }], { maxQueued: 1000, maxContinuations: 0 });
      // Shots every 10 ms from the start until the log shows the end, then a few more: the
      // moment the turn ends falls among them however long the machine takes to get there.
      let over = false;
      const end = ended(tid).finally(() => (over = true));
      const shots: ReturnType<typeof steerSafely>[] = [];
      for (let after = 0; after < 5; after += over ? 1 : 0) {
        shots.push(steerSafely(stack, tid, `race ${shots.length}`, uuidv7()));
        await pause(10);
      }
      const results = await Promise.all(shots);
      const events = await end;
      for (const { steerId, res } of results) {
        if (res.status >= 200 && res.status < 300) expect(settlementsOf(events, steerId)).toHaveLength(1);
        else {
          expect([409, 429]).toContain(res.status);
          expect(events.some((e) => JSON.stringify(e.event.data).includes(steerId))).toBe(false);
        }
      }
      expect(results.some((r) => r.res.status === 202)).toBe(true);
      expect(results.some((r) => r.res.status === 409)).toBe(true);
    }
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);
  });
});

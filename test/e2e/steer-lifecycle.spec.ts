import { auditLog } from '@steerline/runtime';
import { approvalRequested, approve, startStack, type Stack } from '../support/stack';

type Step = Record<string, unknown>;
const sleep = (ms: number): Step => ({ tool: { name: 'sleep', args: { ms } } });

describe('a steer’s own lifecycle, through HTTP (docs/design.md §2)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  async function startTurn(script: Step[], approvals?: Record<string, unknown>) {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script }, ...(approvals ? { approvals } : {}) });
    expect(res.status).toBe(202);
    return { cid, tid: res.body.turnId as string };
  }
  // A call waiting for approval holds step 1 open until the test approves it, however slow the machine.
  const held = { tools: ['sleep'] };
  const steer = (tid: string, body: Record<string, unknown>, wait = 0) => stack.api('POST', `/turns/${tid}/steers`, body, wait ? { Prefer: `wait=${wait}` } : {});
  const patch = (tid: string, sid: string, text: unknown) => stack.api('PATCH', `/turns/${tid}/steers/${sid}`, { text });
  const userMessages = (tid: string) => stack.model.requests.flatMap((r) => r.messages).filter((m) => m.role === 'user' && m.turnId === tid && m.steerId).map((m) => m.content);

  it('an edit made before the boundary is what the model reads; after it, already_delivered', async () => {
    const { tid } = await startTurn([sleep(10), { text: 'done' }], held);
    await approvalRequested(stack, tid);
    const queued = await steer(tid, { text: 'use tabs' });
    expect(queued.status).toBe(202);
    const edited = await patch(tid, queued.body.steerId, '  use spaces  ');
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ steerId: queued.body.steerId, status: 'queued', position: 1, text: 'use spaces' });
    expect((await patch(tid, queued.body.steerId, '   ')).status).toBe(400);
    const settling = stack.api('GET', `/turns/${tid}/steers/${queued.body.steerId}`, undefined, { Prefer: 'wait=30' });
    await approve(stack, tid);
    const settled = await settling;
    expect(settled.body).toMatchObject({ status: 'delivered', text: 'use spaces' });
    // Once the turn ended the read model answers: it must have caught up.
    await stack.turnEnded(tid);
    await stack.settled();
    const late = await patch(tid, queued.body.steerId, 'use both');
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('already_delivered');
    await stack.turnEnded(tid);
    expect(userMessages(tid)).toEqual(['use spaces']);
    const edits = (await stack.turnEvents(tid)).filter((e) => e.event.type === 'SteerEdited').map((e) => e.event.data);
    expect(edits).toEqual([{ steerId: queued.body.steerId, text: 'use spaces', previousText: 'use tabs' }]);
  });

  it('edits racing the boundary: every edit answered 200 is the text delivered, and the first refused one is already_delivered', async () => {
    // The answer after the boundary takes a while, so the refusal comes from the running turn's decider.
    const { tid } = await startTurn([sleep(300), { text: 'done', delayMs: 2500 }]);
    const { steerId } = (await steer(tid, { text: 'v0' })).body;
    let lastAccepted = 'v0';
    let refused: { status: number; body: any } | undefined;
    for (let i = 1; i < 500 && !refused; i++) {
      const res = await patch(tid, steerId, `v${i}`);
      if (res.status === 200) lastAccepted = `v${i}`;
      else refused = res;
    }
    expect(refused?.status).toBe(409);
    expect(refused?.body.error.code).toBe('already_delivered');
    await stack.turnEnded(tid);
    expect(userMessages(tid)).toEqual([lastAccepted]);
  });

  it('a steer still queued at its deadline comes back expired with its text', async () => {
    // Step 1's call waits for an approval that never comes: the steer stays queued past its deadline.
    const { tid } = await startTurn([sleep(10), { text: 'done' }], held);
    await approvalRequested(stack, tid);
    const started = Date.now();
    const expired = await steer(tid, { text: 'only if quick', ttlMs: 1000 }, 10);
    expect(expired.status).toBe(409);
    expect(expired.body.error).toMatchObject({ code: 'steer_dropped', reason: 'expired', text: 'only if quick' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const badTtl = await steer(tid, { text: 'x', ttlMs: 999 });
    expect(badTtl.status).toBe(400);
    await stack.api('POST', `/turns/${tid}/cancel`, {});
    await stack.turnEnded(tid);
  });

  it('expiry racing the boundary: each steer is either delivered or expired, never both, and only delivered ones reach the model', async () => {
    // The deadlines (1 s after acceptance) fall around the end of the 1 s tool call.
    const { tid } = await startTurn([sleep(1000), { text: 'done', delayMs: 1000 }]);
    const sent = await Promise.all(['a', 'b', 'c', 'd'].map((text) => steer(tid, { text, ttlMs: 1000 })));
    expect(sent.map((r) => r.status)).toEqual([202, 202, 202, 202]);
    const events = await stack.turnEnded(tid);
    const settlements = events.filter((e) => e.event.type === 'SteeringDelivered' || e.event.type === 'SteerDropped');
    expect(settlements).toHaveLength(4);
    const delivered = settlements.filter((e) => e.event.type === 'SteeringDelivered').map((e) => (e.event.data as { text: string }).text);
    for (const e of settlements) if (e.event.type === 'SteerDropped') expect(e.event.data).toMatchObject({ reason: 'expired' });
    expect(userMessages(tid).sort()).toEqual(delivered.sort());
  });

  it('at a text-only end a drop steer is dropped turn_ended while a continue steer is delivered and the turn goes on', async () => {
    // 2.5 s of text-only answer: room for both steers to land before it ends on a loaded machine.
    const { tid } = await startTurn([{ text: 'writing', delayMs: 2500 }, { text: 'done' }]);
    const dropped = steer(tid, { text: 'only for this answer', onTurnEnd: 'drop' }, 30);
    const kept = steer(tid, { text: 'and then this' }, 30);
    expect((await dropped).body.error).toMatchObject({ code: 'steer_dropped', reason: 'turn_ended', text: 'only for this answer' });
    expect((await kept).body).toMatchObject({ status: 'delivered', boundary: 'turn_end' });
    const events = await stack.turnEnded(tid);
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    expect(userMessages(tid)).toEqual(['and then this']);
    const droppedId = (await dropped).body.error.steerId;
    await stack.settled();
    const afterEnd = await patch(tid, droppedId, 'too late');
    expect(afterEnd.status).toBe(409);
    expect(afterEnd.body.error).toMatchObject({ code: 'steer_dropped', reason: 'turn_ended' });
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);
  });
});

import { auditLog, type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

type Step = Record<string, unknown>;
const sleep = (ms: number): Step => ({ tool: { name: 'sleep', args: { ms } } });
const typesOf = (events: StoredEvent[]) => events.map((e) => e.event.type);

describe('tool-call approvals, through HTTP (docs/design.md §9)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  async function startTurn(script: Step[], approvals: Record<string, unknown>) {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script }, approvals });
    expect(res.status).toBe(202);
    return { cid, tid: res.body.turnId as string };
  }
  const decide = (tid: string, toolCallId: string, decision: string, reason?: string) =>
    stack.api('POST', `/turns/${tid}/approvals/${toolCallId}`, { decision, ...(reason ? { reason } : {}) });
  const requested = (tid: string) =>
    eventually(async () => ((await stack.turnEvents(tid)).some((e) => e.event.type === 'ToolApprovalRequested') ? true : undefined), 10_000, 'an approval request');

  it('a call stops before it runs; a steer sent then neither decides nor cancels it and is delivered after the approval and the call', async () => {
    const { tid } = await startTurn([sleep(200), { text: 'done' }], { tools: ['sleep'] });
    await requested(tid);
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'also check the tests' });
    expect(steer.status).toBe(202);
    await stack.settled();
    const waiting = await stack.api('GET', `/turns/${tid}`);
    expect(waiting.body.pendingApprovals).toEqual([{ toolCallId: 'call_1_0', step: 1, name: 'sleep', args: { ms: 200 }, requestedAt: expect.any(String) }]);
    expect(waiting.body.status).toBe('running');
    // The steer is still queued and the call still waits: nothing was decided or started.
    const before = await stack.turnEvents(tid);
    expect(typesOf(before).filter((t) => ['ToolApprovalDecided', 'ToolCallStarted', 'SteeringDelivered'].includes(t))).toEqual([]);

    const approved = await decide(tid, 'call_1_0', 'approve', 'fine');
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ toolCallId: 'call_1_0', decision: 'approved', reason: 'fine', by: 'user' });
    const again = await decide(tid, 'call_1_0', 'approve');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(approved.body);
    const other = await decide(tid, 'call_1_0', 'deny');
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: 'already_decided', decision: 'approved' });

    const events = await stack.turnEnded(tid);
    const step1 = typesOf(events).filter((t) => !['SteerQueued', 'TurnStarted', 'ModelRequested', 'ModelResponded'].includes(t)).slice(0, 4);
    expect(step1).toEqual(['ToolApprovalRequested', 'ToolApprovalDecided', 'ToolCallStarted', 'ToolCallFinished']);
    const finishedAt = typesOf(events).indexOf('ToolCallFinished');
    expect(typesOf(events).indexOf('SteeringDelivered')).toBe(finishedAt + 1);
    await stack.settled();
    expect((await stack.api('GET', `/turns/${tid}`)).body.pendingApprovals).toEqual([]);
  });

  it('a denied call reaches the model as an error result, the transcript shows it as the model got it, and a text-only continuation still works', async () => {
    const { cid, tid } = await startTurn([sleep(200), { text: 'writing up', delayMs: 2500 }, { text: 'done' }], { tools: ['*'] });
    await requested(tid);
    const denied = await decide(tid, 'call_1_0', 'deny', 'not on my laptop');
    expect(denied.body).toEqual({ toolCallId: 'call_1_0', decision: 'denied', reason: 'not on my laptop', by: 'user' });
    // Sent once step 2 is asked for, while it writes its text-only answer (2.5 s): delivered at the turn's end, which continues.
    await eventually(async () => (typesOf(await stack.turnEvents(tid)).filter((t) => t === 'ModelRequested').length === 2 ? true : undefined), 10_000, 'step 2 to be requested');
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'one more thing' }, { Prefer: 'wait=10' });
    expect(steer.body).toMatchObject({ status: 'delivered', boundary: 'turn_end' });
    const events = await stack.turnEnded(tid);
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    const result = events.find((e) => e.event.type === 'ToolCallFinished')!.event.data;
    expect(result).toMatchObject({ ok: false, error: { code: 'denied', message: 'the call was denied by the user: not on my laptop' } });
    expect(typesOf(events)).not.toContain('ToolCallStarted');
    const seen = stack.model.requests.find((r) => r.messages.some((m) => m.role === 'tool' && m.turnId === tid))!;
    const toolMessage = seen.messages.find((m) => m.role === 'tool' && m.turnId === tid)!;
    await stack.settled();
    const transcript = (await stack.api('GET', `/conversations/${cid}`)).body.messages as { role: string; content: string; toolCallId?: string }[];
    expect(transcript.find((m) => m.role === 'tool')).toMatchObject({ toolCallId: 'call_1_0', content: toolMessage.content });
    expect(toolMessage.content).toBe('Error: the call was denied by the user: not on my laptop');
  });

  it('nobody deciding within timeoutMs denies the call by timeout and the turn goes on', async () => {
    const { tid } = await startTurn([sleep(100), { text: 'done' }], { tools: ['sleep'], timeoutMs: 1000 });
    const events = await stack.turnEnded(tid);
    const decided = events.find((e) => e.event.type === 'ToolApprovalDecided')!.event.data;
    expect(decided).toEqual({ step: 1, toolCallId: 'call_1_0', decision: 'denied', by: 'timeout' });
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    const late = await decide(tid, 'call_1_0', 'approve');
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('turn_not_running');
  });

  it('cancel while calls wait denies each by cancel, then drops the queued steers, then TurnCancelled', async () => {
    const { tid } = await startTurn([{ tools: [{ name: 'sleep', args: { ms: 100 } }, { name: 'echo', args: { text: 'x' } }] }], { tools: ['*'] });
    await requested(tid);
    expect((await decide(tid, 'call_1_9', 'approve')).status).toBe(404);
    expect((await decide(tid, 'call_1_0', 'maybe')).status).toBe(400);
    expect((await stack.api('POST', `/turns/${tid}/steers`, { text: 'queued' })).status).toBe(202);
    expect((await stack.api('POST', `/turns/${tid}/cancel`, { reason: 'stop' })).status).toBe(202);
    const events = await stack.turnEnded(tid);
    expect(events.slice(-4).map((e) => [e.event.type, (e.event.data as { by?: string; reason?: string }).by ?? (e.event.data as { reason?: string }).reason])).toEqual([
      ['ToolApprovalDecided', 'cancel'],
      ['ToolApprovalDecided', 'cancel'],
      ['SteerDropped', 'turn_cancelled'],
      ['TurnCancelled', 'stop'],
    ]);
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);
  });
});

import { SteerlineClient, StepInterrupted, type ExternalTurn } from '@steerline/client';
import { auditLog, type StoredEvent } from '@steerline/runtime';
import { renderInterrupted } from '@steerline/contracts';
import { eventually } from '../support/env';
import { approvalRequested, startStack, type Stack } from '../support/stack';

const typesOf = (events: StoredEvent[]) => events.map((e) => e.event.type);
const call = (id: string, name = 'sleep') => ({ id, name, args: {} });

/**
 * Urgent steers of external turns (docs/runner-protocol.md, "Interrupts"), driven with the
 * client's runner API and no framework: the runner hears of the interrupt (its interruptSignal),
 * stops its step and reports what it had; Steerline cuts and delivers at the boundary `interrupt`.
 */
describe('external turns: an urgent steer', () => {
  let stack: Stack;
  let client: SteerlineClient;
  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_RUNNER_LEASE_MS: '6000' } });
    client = new SteerlineClient({ baseUrl: stack.url });
  });
  afterAll(() => stack?.close());

  const start = async (input: { approvals?: { tools: string[] } } = {}) => {
    const cid = (await client.createConversation()).id;
    return { cid, turn: await client.startExternalTurn(cid, { prompt: 'go', ...input }) };
  };
  const urgent = (tid: string, text: string) => stack.api('POST', `/turns/${tid}/steers`, { text, urgency: 'interrupt' }, { Prefer: 'wait=0' });
  const interrupted = (turn: ExternalTurn) => eventually(async () => turn.interruptSignal.aborted || undefined, 10_000, 'the runner to hear of the interrupt');
  async function finish(turn: ExternalTurn, step: number, cid: string) {
    expect(await turn.reportAnswer({ step, text: 'done', toolCalls: [] })).toEqual({ next: 'end', status: 'completed' });
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { tenantId: 'default', conversationId: cid, requireSettled: true });
    expect(report.violations).toEqual([]);
  }

  it('during an answer: the runner’s signal aborts, its report of what was written ends ModelInterrupted, and the steers come with the cut', async () => {
    const { cid, turn } = await start();
    const ordinary = await stack.api('POST', `/turns/${turn.turnId}/steers`, { text: 'first' }, { Prefer: 'wait=0' });
    const accepted = await urgent(turn.turnId, 'stop, use tabs');
    expect(accepted.body).toMatchObject({ status: 'queued', urgency: 'interrupt' });
    expect(accepted.body.waitingFor).toBeUndefined();
    await interrupted(turn);
    expect(turn.interruptSignal.reason).toBeInstanceOf(StepInterrupted);
    expect(turn.signal.aborted).toBe(false);
    const next = await turn.reportInterrupted({ step: 1, partialText: 'I will use spa' });
    expect(next).toEqual({
      next: 'model',
      step: 2,
      steers: [expect.objectContaining({ steerId: ordinary.body.steerId, text: 'first' }), expect.objectContaining({ steerId: accepted.body.steerId, text: 'stop, use tabs' })],
      cut: { step: 1, text: renderInterrupted('I will use spa'), results: [] },
    });
    // The next step has a signal of its own.
    expect(turn.interruptSignal.aborted).toBe(false);
    const events = await stack.turnEvents(turn.turnId);
    expect(typesOf(events).slice(-4)).toEqual(['ModelInterrupted', 'SteeringDelivered', 'SteeringDelivered', 'ModelRequested']);
    expect(events.find((e) => e.event.type === 'ModelInterrupted')!.event.data).toEqual({ step: 1, partialText: 'I will use spa' });
    expect(events.some((e) => e.event.type === 'ModelResponded')).toBe(false);
    await finish(turn, 2, cid);
    // The receipt is read from the read model, which trails the log.
    const receipt = await eventually(async () => {
      const r = await stack.api('GET', `/turns/${turn.turnId}/steers/${accepted.body.steerId}`);
      // Not found until the steer is projected, then queued until its delivery is.
      return typeof r.body.status === 'string' && r.body.status !== 'queued' ? r : undefined;
    }, 10_000, 'the receipt to be projected');
    expect(receipt.body).toMatchObject({ status: 'delivered', boundary: 'interrupt', step: 1, requestStep: 2 });
  });

  it('during tool calls: the steer waits for the runner’s calls; a result it had stands, the rest end interrupted', async () => {
    const { cid, turn } = await start();
    expect(await turn.reportAnswer({ step: 1, text: '', toolCalls: [call('c1'), call('c2', 'echo')] })).toMatchObject({ next: 'tools', step: 1 });
    const accepted = await urgent(turn.turnId, 'stop');
    expect(accepted.body).toMatchObject({ status: 'queued', urgency: 'interrupt', waitingFor: ['c1', 'c2'] });
    await interrupted(turn);
    const next = await turn.reportInterrupted({ step: 1, results: [{ toolCallId: 'c2', ok: true, output: 'echoed' }] });
    expect(next).toMatchObject({
      next: 'model',
      step: 2,
      steers: [expect.objectContaining({ text: 'stop' })],
      cut: {
        step: 1,
        results: [
          { toolCallId: 'c2', name: 'echo', ok: true, output: 'echoed' },
          { toolCallId: 'c1', name: 'sleep', ok: false, error: { code: 'interrupted', message: expect.any(String) } },
        ],
      },
    });
    const events = await stack.turnEvents(turn.turnId);
    const results = events.filter((e) => e.event.type === 'ToolCallFinished').map((e) => e.event.data);
    expect(results).toEqual([expect.objectContaining({ toolCallId: 'c2', ok: true }), expect.objectContaining({ toolCallId: 'c1', ok: false, error: expect.objectContaining({ code: 'interrupted' }) })]);
    expect(events.find((e) => e.event.type === 'SteeringDelivered')!.event.data).toMatchObject({ boundary: 'interrupt', afterToolCallIds: ['c2', 'c1'] });
    await finish(turn, 2, cid);
  });

  it('during an approval wait: the call is denied `interrupted` at once (no person approved it) and the runner reads the steers next', async () => {
    const { cid, turn } = await start({ approvals: { tools: ['guarded'] } });
    await turn.reportAnswer({ step: 1, text: '', toolCalls: [call('c1', 'guarded')] });
    await approvalRequested(stack, turn.turnId, 'c1');
    const waiting = turn.approval('c1');
    await urgent(turn.turnId, 'never mind');
    expect(await waiting).toEqual({ toolCallId: 'c1', decision: 'denied', reason: 'interrupted', by: 'cancel' });
    // Nothing of the runner's ran: the step's boundary was the engine's to decide.
    expect(turn.interruptSignal.aborted).toBe(false);
    const next = await turn.reportResults(1, []);
    expect(next).toMatchObject({ next: 'model', step: 2, steers: [expect.objectContaining({ text: 'never mind' })], cut: { step: 1, results: [expect.objectContaining({ toolCallId: 'c1', error: expect.objectContaining({ code: 'denied' }) })] } });
    await finish(turn, 2, cid);
  });

  it('an answer that comes before the runner heard of it stands; the answer asks the runner to stop the calls it would run', async () => {
    const { cid, turn } = await start();
    await urgent(turn.turnId, 'wait');
    const tools = await turn.reportAnswer({ step: 1, text: 'running it', toolCalls: [call('c1')] });
    expect(tools).toEqual({ next: 'tools', step: 1, calls: [{ toolCallId: 'c1', name: 'sleep', approval: 'none', finished: false }], interrupt: { step: 1 } });
    await interrupted(turn);
    const next = await turn.reportInterrupted({ step: 1 });
    expect(next).toMatchObject({ next: 'model', step: 2, cut: { step: 1, results: [expect.objectContaining({ toolCallId: 'c1', error: expect.objectContaining({ code: 'interrupted' }) })] } });
    const events = await stack.turnEvents(turn.turnId);
    expect(events.find((e) => e.event.type === 'ModelResponded')!.event.data).toMatchObject({ step: 1, text: 'running it' });
    expect(events.some((e) => e.event.type === 'ModelInterrupted')).toBe(false);
    await finish(turn, 2, cid);
  });

  it('two interrupts in a row: one stop, both delivered at the same point; a late stop report decides nothing', async () => {
    const { cid, turn } = await start();
    await turn.reportAnswer({ step: 1, text: '', toolCalls: [call('c1')] });
    const first = await urgent(turn.turnId, 'one');
    const second = await urgent(turn.turnId, 'two');
    expect(second.body).toMatchObject({ status: 'queued', urgency: 'interrupt', waitingFor: ['c1'] });
    await interrupted(turn);
    const next = await turn.reportInterrupted({ step: 1 });
    expect(next).toMatchObject({ next: 'model', step: 2, steers: [expect.objectContaining({ steerId: first.body.steerId }), expect.objectContaining({ steerId: second.body.steerId })] });
    const before = (await stack.turnEvents(turn.turnId)).length;
    // Sent again (a retry): step 1 is behind the turn now.
    expect(await turn.reportInterrupted({ step: 1 })).toMatchObject({ next: 'model', step: 2 });
    expect(await stack.turnEvents(turn.turnId)).toHaveLength(before);
    const events = await stack.turnEvents(turn.turnId);
    expect(events.filter((e) => e.event.type === 'ToolCallFinished')).toHaveLength(1);
    expect(events.flatMap((e) => (e.event.type === 'SteeringDelivered' ? [e.event.data.boundary] : []))).toEqual(['interrupt', 'interrupt']);
    await finish(turn, 2, cid);
  });

  it('a stop report for a step never requested is refused with nothing appended', async () => {
    const { cid, turn } = await start();
    const before = (await stack.turnEvents(turn.turnId)).length;
    await expect(turn.reportInterrupted({ step: 5 })).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
    expect(await stack.turnEvents(turn.turnId)).toHaveLength(before);
    await finish(turn, 1, cid);
  });
});

import { DEFAULT_LIMITS, checkInvariants, messagesOf, renderSteer, type ModelSpec, type TurnEvent } from '@steerline/contracts';
import { refused } from '../../../../test/support/decider-specification';
import type { TurnCommand } from './turn.commands';
import type { TurnEventDraft } from './turn.decider';
import { INTERRUPTED_CALL_MESSAGE } from './turn.interrupt';
import { receiptOf } from './turn.state';
import { evolve } from './turn.evolve';
import { answerCalling, answerText, given, newTurnState, run, startCommand, started, steer, steerId, toolDone, types, refusal } from './turn.fixtures';
import { decide } from './turn.decider';

/** docs/design.md §2, "Urgency": an urgent steer cuts the step, then is delivered at the boundary `interrupt`. */
const model: ModelSpec = { provider: 'scripted', name: 'scripted', script: [] };
const turnStarted = (approvals?: { tools: string[] }): TurnEventDraft => ({ type: 'TurnStarted', data: { prompt: 'do the thing', model, limits: DEFAULT_LIMITS, engineId: 'engine-test', ...(approvals && { approvals }) } });
const requested = (step: number, steerIds: string[] = []): TurnEventDraft => ({ type: 'ModelRequested', data: { step, steerIds } });
const queued = (n: number, extra: Record<string, unknown> = {}): TurnEventDraft => ({ type: 'SteerQueued', data: { steerId: steerId(n), text: `steer ${n}`, position: n, queueDepth: n, ...extra } });
const delivered = (n: number, step: number, afterToolCallIds: string[] = []): TurnEventDraft => ({
  type: 'SteeringDelivered',
  data: { steerId: steerId(n), text: `steer ${n}`, position: n, step, boundary: 'interrupt', requestStep: step + 1, afterToolCallIds, rendered: renderSteer(`steer ${n}`) },
});
const sleeping = (step: number, i = 0): TurnEventDraft[] => [
  { type: 'ModelResponded', data: { step, text: '', toolCalls: [{ id: `call_${step}_${i}`, name: 'sleep', args: {} }] } },
  { type: 'ToolCallStarted', data: { step, toolCallId: `call_${step}_${i}`, name: 'sleep', args: {} } },
];
const interrupted = (step: number, id: string, durationMs = 0): TurnEventDraft => ({
  type: 'ToolCallFinished',
  data: { step, toolCallId: id, name: 'sleep', ok: false, error: { code: 'interrupted', message: INTERRUPTED_CALL_MESSAGE }, durationMs },
});
const interrupt = (n: number, facts: Partial<Extract<TurnCommand, { type: 'Interrupt' }>> = {}): TurnCommand => ({ type: 'Interrupt', steerId: steerId(n), text: `steer ${n}`, uninterruptible: [], ...facts });

describe('turn decider: an urgent steer (interrupt)', () => {
  it('during a streamed answer: the answer is cut as ModelInterrupted, the queue is delivered FIFO at `interrupt`, and the model is asked again', () => {
    given([turnStarted(), requested(1), queued(1)])
      .when(interrupt(2, { partialText: 'I will delete the', usage: { inputTokens: 5, outputTokens: 4 } }))
      .then([
        queued(2, { urgency: 'interrupt' }),
        { type: 'ModelInterrupted', data: { step: 1, partialText: 'I will delete the', usage: { inputTokens: 5, outputTokens: 4 } } },
        delivered(1, 1),
        delivered(2, 1),
        requested(2, [steerId(1), steerId(2)]),
      ]);
  });

  it('during tool calls: each running call gets one `interrupted` result (with how long it ran), then the boundary', () => {
    given([turnStarted(), requested(1), ...sleeping(1)])
      .when(interrupt(1, { elapsedMs: { call_1_0: 1200 } }))
      .then([queued(1, { urgency: 'interrupt' }), interrupted(1, 'call_1_0', 1200), delivered(1, 1, ['call_1_0']), requested(2, [steerId(1)])]);
  });

  it('a pending approval is denied by the engine with reason `interrupted`: a steer never approves (I7)', () => {
    const waiting: TurnEventDraft[] = [
      { type: 'ModelResponded', data: { step: 1, text: '', toolCalls: [{ id: 'call_1_0', name: 'sleep', args: {} }] } },
      { type: 'ToolApprovalRequested', data: { step: 1, toolCallId: 'call_1_0', name: 'sleep', args: {} } },
    ];
    const [, decided, finished] = given([turnStarted({ tools: ['sleep'] }), requested(1), ...waiting])
      .when(interrupt(1))
      .events();
    expect(decided).toEqual({ type: 'ToolApprovalDecided', data: { step: 1, toolCallId: 'call_1_0', decision: 'denied', reason: 'interrupted', by: 'cancel' } });
    expect(finished.data).toMatchObject({ ok: false, error: { code: 'denied', message: 'the call was denied: a steer interrupted the step before anyone decided' } });
  });

  it('a non-interruptible call is waited for, and the receipt names it; its end is the boundary `interrupt`', () => {
    given([turnStarted(), requested(1), ...sleeping(1)])
      .when(interrupt(1, { uninterruptible: ['sleep'] }))
      .then([queued(1, { urgency: 'interrupt', waitingFor: ['call_1_0'] })]);
    const { state, events } = run([startCommand(), answerCalling(1, 'sleep', 'echo'), interrupt(1, { uninterruptible: ['sleep'] })]);
    expect(types(events).slice(-2)).toEqual(['SteerQueued', 'ToolCallFinished']);
    expect(receiptOf(state, steerId(1))).toMatchObject({ status: 'queued', urgency: 'interrupt', waitingFor: ['call_1_0'] });
    const done = run([toolDone(1, 0)], state);
    expect(types(done.events)).toEqual(['ToolCallFinished', 'SteeringDelivered', 'ModelRequested']);
    expect(done.events[1].data).toMatchObject({ boundary: 'interrupt', afterToolCallIds: ['call_1_1', 'call_1_0'] });
  });

  it('a second interrupt before the first is delivered cuts nothing more and is delivered at the same point', () => {
    const { state } = run([startCommand(), answerCalling(1, 'sleep'), interrupt(1, { uninterruptible: ['sleep'] })]);
    const second = run([interrupt(2, { uninterruptible: [] })], state);
    expect(types(second.events)).toEqual(['SteerQueued']);
    expect(second.events[0].data).toMatchObject({ urgency: 'interrupt', waitingFor: ['call_1_0'] });
    const done = run([toolDone(1, 0)], second.state);
    expect(done.events.filter((e) => e.type === 'SteeringDelivered').map((e) => [e.data.steerId, e.data.boundary])).toEqual([
      [steerId(1), 'interrupt'],
      [steerId(2), 'interrupt'],
    ]);
  });

  it('the cut step’s late answer is refused: an interrupted answer is never recorded as an answer', () => {
    const { state } = run([startCommand(), interrupt(1, { partialText: 'half' })]);
    expect(refusal(() => decide(answerText(1), state)).code).toBe('invalid_request');
    expect(started(state)).toMatchObject({ step: 2, awaiting: 'model' });
  });

  it('the same steer id again is the same steer: no second cut', () => {
    given([turnStarted(), requested(1), queued(1, { urgency: 'interrupt' })])
      .when(interrupt(1))
      .then([]);
    given().when(interrupt(1)).then(refused('turn_not_running'));
  });

  it('an engine that resumes a turn whose cut was lost cuts it again, reruns nothing, and delivers', () => {
    const { events } = run([startCommand(), answerCalling(1, 'sleep'), interrupt(1)]);
    const kept = events.slice(0, events.findIndex((e) => e.type === 'SteerQueued') + 1);
    const rebuilt = kept.reduce(evolve, newTurnState());
    const resumed = run([{ type: 'ResumeTurn', engineId: 'engine-2', limit: 3, rerunnable: ['sleep'] }], rebuilt);
    expect(types(resumed.events)).toEqual(['TurnResumed', 'ToolCallFinished', 'SteeringDelivered', 'ModelRequested']);
    expect(resumed.events[1].data).toMatchObject({ error: { code: 'interrupted' } });
    expect(checkInvariants([...kept, ...resumed.events].map((event) => ({ event })))).toEqual([]);
  });

  it('the model reads the cut answer as a marked fragment, never as a complete answer; an empty one not at all', () => {
    const { events } = run([startCommand(), steer(1), interrupt(2, { partialText: 'Deleting all' })]);
    const cut = events.find((e) => e.type === 'ModelInterrupted') as TurnEvent;
    expect(messagesOf(cut)).toEqual([{ role: 'assistant', turnId: cut.turnId, step: 1, content: expect.stringMatching(/^Deleting all\n\n\[interrupted: /) }]);
    const empty = run([startCommand(), interrupt(1)]).events.find((e) => e.type === 'ModelInterrupted') as TurnEvent;
    expect(messagesOf(empty)).toEqual([]);
    expect(checkInvariants(events.map((event) => ({ event })))).toEqual([]);
  });
});

/** docs/runner-protocol.md, "Interrupts": an external turn's runner holds its step, so it cuts it and reports. */
describe('turn decider: an urgent steer of an external turn (the runner cuts)', () => {
  const byRunner = (n: number, facts: Partial<Extract<TurnCommand, { type: 'Interrupt' }>> = {}) => interrupt(n, { cutBy: 'runner', ...facts });
  const stopped = (step: number, facts: Partial<Extract<TurnCommand, { type: 'RecordInterruption' }>> = {}): TurnCommand => ({ type: 'RecordInterruption', step, ...facts });

  it('during an answer: the steer waits (nothing is cut yet); the runner’s report cuts it as ModelInterrupted and delivers at `interrupt`', () => {
    given([turnStarted(), requested(1), queued(1)])
      .when(byRunner(2))
      .then([queued(2, { urgency: 'interrupt' })]);
    given([turnStarted(), requested(1), queued(1), queued(2, { urgency: 'interrupt' })])
      .when(stopped(1, { partialText: 'I will del' }))
      .then([{ type: 'ModelInterrupted', data: { step: 1, partialText: 'I will del' } }, delivered(1, 1), delivered(2, 1), requested(2, [steerId(1), steerId(2)])]);
  });

  it('during tool calls: every running call is waited for (the runner stops it); the report gives the rest `interrupted` results', () => {
    given([turnStarted(), requested(1), ...sleeping(1)])
      .when(byRunner(1, { uninterruptible: ['sleep'] }))
      .then([queued(1, { urgency: 'interrupt', waitingFor: ['call_1_0'] })]);
    given([turnStarted(), requested(1), ...sleeping(1), queued(1, { urgency: 'interrupt', waitingFor: ['call_1_0'] })])
      .when(stopped(1))
      .then([interrupted(1, 'call_1_0'), delivered(1, 1, ['call_1_0']), requested(2, [steerId(1)])]);
  });

  it('a result the runner had before it stopped stands; a call it reports finished is not cut again', () => {
    const { state } = run([startCommand(), answerCalling(1, 'sleep', 'echo'), byRunner(1, { uninterruptible: ['sleep', 'echo'] })]);
    const done = run([toolDone(1, 1), stopped(1)], state);
    expect(types(done.events)).toEqual(['ToolCallFinished', 'ToolCallFinished', 'SteeringDelivered', 'ModelRequested']);
    expect(done.events[0].data).toMatchObject({ toolCallId: 'call_1_1', ok: true });
    expect(done.events[1].data).toMatchObject({ toolCallId: 'call_1_0', error: { code: 'interrupted' } });
    expect(done.events[2].data).toMatchObject({ boundary: 'interrupt', afterToolCallIds: ['call_1_1', 'call_1_0'] });
  });

  it('an answer the runner reports before it heard of the steer stands; its calls wait to be stopped, a call that asks a person is denied', () => {
    const { state, events } = run([startCommand({}, { tools: ['guarded'] }), byRunner(1), answerCalling(1, 'sleep', 'guarded')]);
    expect(types(events).slice(-5)).toEqual(['ModelResponded', 'ToolCallStarted', 'ToolApprovalRequested', 'ToolApprovalDecided', 'ToolCallFinished']);
    expect(events.at(-2)!.data).toMatchObject({ decision: 'denied', reason: 'interrupted', by: 'cancel' });
    const cut = run([stopped(1)], state);
    expect(types(cut.events)).toEqual(['ToolCallFinished', 'SteeringDelivered', 'ModelRequested']);
    expect(checkInvariants([...events, ...cut.events].map((event) => ({ event })))).toEqual([]);
  });

  it('a text-only answer that comes first stands: the urgent steer is delivered at `turn_end`, and a late stop report cuts nothing', () => {
    const { state, events } = run([startCommand(), byRunner(1), answerText(1, 'all done')]);
    expect(types(events).slice(-3)).toEqual(['ModelResponded', 'SteeringDelivered', 'ModelRequested']);
    expect(events.at(-2)!.data).toMatchObject({ boundary: 'turn_end' });
    expect(run([stopped(1)], state).events).toEqual([]);
    expect(refusal(() => decide(stopped(3), state)).code).toBe('invalid_request');
  });

  it('a stop report with no urgent steer waiting cuts nothing; an engine that resumes the turn leaves the cut to the runner', () => {
    const { state } = run([startCommand(), answerCalling(1, 'sleep')]);
    expect(run([stopped(1)], state).events).toEqual([]);
    const external = { ...startCommand(), runner: 'external' as const, leaseDigest: 'ab'.repeat(32) };
    const pending = run([external, byRunner(1)]);
    const resumed = run([{ type: 'ResumeTurn', engineId: 'engine-2', limit: 3, rerunnable: [] }], pending.state);
    expect(types(resumed.events)).toEqual(['TurnResumed']);
    expect(types(run([stopped(1, { partialText: 'x' })], resumed.state).events)).toEqual(['ModelInterrupted', 'SteeringDelivered', 'ModelRequested']);
  });
});

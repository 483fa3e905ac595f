import { checkInvariants } from '@steerline/contracts';
import { decide } from './turn.decider';
import { approvalAnswerOf, pendingApprovals } from './turn.state';
import { evolve } from './turn.evolve';
import { answerCalling, answerText, approve, deny, newTurnState, run, startCommand, started, steer, steerId, toolDone, types, refusal } from './turn.fixtures';

const sleepNeedsApproval = startCommand({}, { tools: ['sleep'] });

describe('turn decider: tool-call approvals (docs/design.md §9)', () => {
  it('a call of a listed tool waits for approval while an unlisted one starts at once', () => {
    const { events, state } = run([sleepNeedsApproval, answerCalling(1, 'sleep', 'echo')]);
    expect(types(events).slice(-3)).toEqual(['ModelResponded', 'ToolApprovalRequested', 'ToolCallStarted']);
    expect(events.at(-2)!.data).toEqual({ step: 1, toolCallId: 'call_1_0', name: 'sleep', args: {} });
    expect(pendingApprovals(state).map((a) => a.toolCallId)).toEqual(['call_1_0']);
  });

  it('"*" asks for every tool; a turn without a policy asks for none', () => {
    expect(types(run([startCommand({}, { tools: ['*'] }), answerCalling(1, 'echo')]).events).at(-1)).toBe('ToolApprovalRequested');
    expect(types(run([startCommand(), answerCalling(1, 'sleep')]).events).at(-1)).toBe('ToolCallStarted');
  });

  it('an approved call starts after its decision; the boundary waits for every call', () => {
    const { state: waiting } = run([sleepNeedsApproval, answerCalling(1, 'sleep', 'echo'), toolDone(1, 1)]);
    expect(started(waiting).awaiting).toBe('tools');
    const { events } = run([approve(1, 0, 'fine'), toolDone(1, 0)], waiting);
    expect(types(events)).toEqual(['ToolApprovalDecided', 'ToolCallStarted', 'ToolCallFinished', 'ModelRequested']);
    expect(events[0].data).toEqual({ step: 1, toolCallId: 'call_1_0', decision: 'approved', reason: 'fine', by: 'user' });
  });

  it('a waiting call cannot report a result before it is approved', () => {
    const { state } = run([sleepNeedsApproval, answerCalling(1, 'sleep')]);
    expect(refusal(() => decide(toolDone(1, 0), state)).code).toBe('invalid_request');
  });

  it('a denied call finishes with a denied error the model reads, and the turn goes on', () => {
    const { events, state } = run([sleepNeedsApproval, answerCalling(1, 'sleep'), deny(1, 0, 'user', 'not now')]);
    expect(types(events).slice(-3)).toEqual(['ToolApprovalDecided', 'ToolCallFinished', 'ModelRequested']);
    expect(events.at(-2)!.data).toMatchObject({ ok: false, error: { code: 'denied', message: 'the call was denied by the user: not now' } });
    const done = run([answerText(2)], state);
    expect(types(done.events).at(-1)).toBe('TurnCompleted');
  });

  it('a timeout denies the call as the timeout', () => {
    const { events } = run([sleepNeedsApproval, answerCalling(1, 'sleep'), deny(1, 0, 'timeout')]);
    expect(events.at(-3)!.data).toMatchObject({ decision: 'denied', by: 'timeout' });
    expect(events.at(-2)!.data).toMatchObject({ error: { code: 'denied', message: 'the call was denied: nobody decided in time' } });
  });

  it('the same decision again is answered without an event; the other one is already_decided with the decision', () => {
    const { state } = run([sleepNeedsApproval, answerCalling(1, 'sleep'), approve(1)]);
    expect(decide(approve(1), state)).toEqual([]);
    expect(approvalAnswerOf(state, 'call_1_0')).toEqual({ toolCallId: 'call_1_0', decision: 'approved', by: 'user' });
    const err = refusal(() => decide(deny(1), state));
    expect(err.code).toBe('already_decided');
    expect(err.details).toMatchObject({ toolCallId: 'call_1_0', decision: 'approved', by: 'user' });
    // A timeout that fires after the person decided loses the same way.
    expect(refusal(() => decide(deny(1, 0, 'timeout'), state)).code).toBe('already_decided');
  });

  it('a decision on a call that never asked is not_found', () => {
    const { state } = run([sleepNeedsApproval, answerCalling(1, 'echo')]);
    expect(refusal(() => decide(approve(1), state)).code).toBe('not_found');
  });

  it('a steer while a call waits neither decides nor cancels it, and is delivered at that step’s boundary after the call', () => {
    const { events: waitingEvents, state: waiting } = run([sleepNeedsApproval, answerCalling(1, 'sleep'), steer(1)]);
    expect(types(waitingEvents).at(-1)).toBe('SteerQueued');
    expect(pendingApprovals(waiting)).toHaveLength(1);
    const { events } = run([approve(1), toolDone(1, 0)], waiting);
    expect(types(events)).toEqual(['ToolApprovalDecided', 'ToolCallStarted', 'ToolCallFinished', 'SteeringDelivered', 'ModelRequested']);
    expect(events[3].data).toMatchObject({ steerId: steerId(1), boundary: 'tool_results', afterToolCallIds: ['call_1_0'] });
  });

  it('the queue cap is unchanged while a call waits', () => {
    const { state } = run([startCommand({ maxQueued: 1 }, { tools: ['sleep'] }), answerCalling(1, 'sleep'), steer(1)]);
    expect(refusal(() => decide(steer(2), state)).code).toBe('queue_full');
    expect(pendingApprovals(state)).toHaveLength(1);
  });

  it('a withdraw while a call waits works and leaves the call waiting', () => {
    const { events, state } = run([sleepNeedsApproval, answerCalling(1, 'sleep'), steer(1), { type: 'WithdrawSteer', steerId: steerId(1) }]);
    expect(events.at(-1)!.data).toMatchObject({ reason: 'withdrawn' });
    expect(pendingApprovals(state)).toHaveLength(1);
  });

  it('cancel while calls wait: each denied by cancel, then the queued steers dropped, then TurnCancelled', () => {
    const { events } = run([startCommand({}, { tools: ['*'] }), answerCalling(1, 'sleep', 'echo'), steer(1), { type: 'CancelTurn', reason: 'stop' }]);
    expect(types(events).slice(-4)).toEqual(['ToolApprovalDecided', 'ToolApprovalDecided', 'SteerDropped', 'TurnCancelled']);
    expect(events.slice(-4, -2).map((e) => e.data)).toEqual([
      { step: 1, toolCallId: 'call_1_0', decision: 'denied', by: 'cancel' },
      { step: 1, toolCallId: 'call_1_1', decision: 'denied', by: 'cancel' },
    ]);
    expect(events.at(-2)!.data).toMatchObject({ reason: 'turn_cancelled' });
    expect(checkInvariants(events.map((event) => ({ event })), { requireSettled: true })).toEqual([]);
  });

  it('a fatal failure of another call of the step denies the waiting ones before the turn fails', () => {
    const { events } = run([sleepNeedsApproval, answerCalling(1, 'sleep', 'echo'), toolDone(1, 1, false, true)]);
    expect(types(events).slice(-3)).toEqual(['ToolCallFinished', 'ToolApprovalDecided', 'TurnFailed']);
    expect(checkInvariants(events.map((event) => ({ event })), { requireSettled: true })).toEqual([]);
  });

  it('after a decision the turn has ended, a decision is turn_not_running', () => {
    const { state } = run([sleepNeedsApproval, answerCalling(1, 'sleep'), { type: 'CancelTurn', reason: 'x' }]);
    expect(refusal(() => decide(approve(1), state)).code).toBe('turn_not_running');
  });
});

describe('turn decider: approvals of a resumed turn (docs/design.md §9, §10)', () => {
  const resume = (limit = 3) => ({ type: 'ResumeTurn', engineId: 'engine-next', limit, rerunnable: ['sleep', 'echo'] }) as const;
  /** The state another engine rebuilds from the first `n` events the log kept. */
  const fromLog = (events: ReturnType<typeof run>['events'], n: number) => events.slice(0, n).reduce(evolve, newTurnState());

  it('a call waiting for a decision keeps waiting: no second request, no decision, and a person decides it on the new engine', () => {
    const before = run([sleepNeedsApproval, answerCalling(1, 'sleep')]);
    const resumed = run([resume()], before.state);
    expect(types(resumed.events)).toEqual(['TurnResumed']);
    expect(pendingApprovals(resumed.state).map((a) => a.toolCallId)).toEqual(['call_1_0']);
    const after = run([approve(1, 0), toolDone(1, 0), answerText(2)], resumed.state);
    const all = [...before.events, ...resumed.events, ...after.events];
    expect(checkInvariants(all.map((event) => ({ event })), { requireSettled: true })).toEqual([]);
  });

  it('an approval whose ToolCallStarted was lost starts the call; a request that was lost is asked again', () => {
    const { events } = run([sleepNeedsApproval, answerCalling(1, 'sleep'), approve(1, 0)]);
    const decided = types(events).indexOf('ToolApprovalDecided');
    expect(types(run([resume()], fromLog(events, decided + 1)).events)).toEqual(['TurnResumed', 'ToolCallStarted']);
    const responded = types(events).indexOf('ModelResponded');
    expect(types(run([resume()], fromLog(events, responded + 1)).events)).toEqual(['TurnResumed', 'ToolApprovalRequested']);
  });

  it('a cancel cut short after its denial: the resumed turn finishes the denied call and goes on (the cancel may be sent again)', () => {
    const { events } = run([sleepNeedsApproval, answerCalling(1, 'sleep'), { type: 'CancelTurn', reason: 'stop' }]);
    const resumed = run([resume()], fromLog(events, types(events).indexOf('ToolApprovalDecided') + 1));
    expect(types(resumed.events)).toEqual(['TurnResumed', 'ToolCallFinished', 'ModelRequested']);
    expect(resumed.events[1].data).toMatchObject({ ok: false, error: { code: 'denied', message: 'the call was denied: the turn was being ended' } });
  });

  it('past the resume limit, waiting calls are denied by cancel before the steers are dropped and the turn fails', () => {
    let state = run([sleepNeedsApproval, answerCalling(1, 'sleep'), steer(1)]).state;
    for (let i = 0; i < 2; i++) state = run([resume(2)], state).state;
    expect(types(run([resume(2)], state).events)).toEqual(['ToolApprovalDecided', 'SteerDropped', 'TurnFailed']);
  });
});

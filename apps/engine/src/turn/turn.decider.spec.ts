import { DEFAULT_LIMITS, SteerlineError, checkInvariants, type ModelSpec } from '@steerline/contracts';
import { decide } from './turn.decider';
import type { TurnCommand } from './turn.commands';
import { receiptOf } from './turn.state';
import { refused } from '../../../../test/support/decider-specification';
import { answerText, answerWithTools, given, run, startCommand, started, steer, steerId, toolDone, types } from './turn.fixtures';
import type { TurnEventDraft } from './turn.decider';

const model: ModelSpec = { provider: 'scripted', name: 'scripted', script: [] };
const turnStarted = (maxQueued = DEFAULT_LIMITS.maxQueued): TurnEventDraft => ({ type: 'TurnStarted', data: { prompt: 'do the thing', model, limits: { ...DEFAULT_LIMITS, maxQueued }, engineId: 'engine-test' } });
const requested = (step: number, steerIds: string[] = []): TurnEventDraft => ({ type: 'ModelRequested', data: { step, steerIds } });
const queued = (n: number, position = n, queueDepth = n): TurnEventDraft => ({ type: 'SteerQueued', data: { steerId: steerId(n), text: `steer ${n}`, position, queueDepth } });

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof SteerlineError) return err.code;
    throw err;
  }
  throw new Error('expected the command to be refused');
}

describe('turn decider', () => {
  describe('given / when / then', () => {
    it('a new turn starts: TurnStarted with its spec and the engine, then the request of step 1', () => {
      given().when(startCommand()).then([turnStarted(), requested(1)]);
    });

    it('a started turn cannot start again', () => {
      given([turnStarted(), requested(1)]).when(startCommand()).then(refused('turn_already_running'));
    });

    it('a steer takes the next position and the queue depth', () => {
      given([turnStarted(), requested(1), queued(1)]).when(steer(2)).then([queued(2)]);
    });

    it('one steer past the cap is refused queue_full with the cap', () => {
      given([turnStarted(2), requested(1), queued(1), queued(2)]).when(steer(3)).then(refused('queue_full', { maxQueued: 2 }));
    });

    it('a steer of a turn that has not started is refused turn_not_running', () => {
      given().when(steer(1)).then(refused('turn_not_running'));
    });
  });

  describe('starting', () => {
    it('a started turn records TurnStarted and asks the model for step 1', () => {
      const { events, state } = run([startCommand()]);
      expect(types(events)).toEqual(['TurnStarted', 'ModelRequested']);
      expect(events.map((e) => e.seq)).toEqual([1, 2]);
      expect(state.status).toBe('running');
    });

    it('an external turn records who runs it and its lease digest; its first request is appended the same way (I5)', () => {
      const leaseDigest = 'a'.repeat(64);
      const start = startCommand() as Extract<TurnCommand, { type: 'StartTurn' }>;
      const { events } = run([{ ...start, runner: 'external', leaseDigest }]);
      expect(types(events)).toEqual(['TurnStarted', 'ModelRequested']);
      expect(events[0].data).toMatchObject({ runner: 'external', leaseDigest });
      expect(events[1].data).toEqual({ step: 1, steerIds: [] });
    });
  });

  describe('queue and boundaries', () => {
    it('a steer queued before the first answer is not drained until a boundary', () => {
      const { events, state } = run([startCommand(), steer(1)]);
      expect(types(events).slice(-1)).toEqual(['SteerQueued']);
      expect(events.at(-1)!.data).toMatchObject({ position: 1, queueDepth: 1, text: 'steer 1' });
      expect(started(state).queue).toEqual([steerId(1)]);
    });

    it('a steer queued during step 1 reaches the model after step 1’s tool results, FIFO', () => {
      const { events } = run([startCommand(), answerWithTools(1), steer(1), steer(2), toolDone(1)]);
      expect(types(events).slice(-4)).toEqual(['ToolCallFinished', 'SteeringDelivered', 'SteeringDelivered', 'ModelRequested']);
      const [d1, d2, req] = events.slice(-3);
      expect(d1.data).toMatchObject({ steerId: steerId(1), position: 1, step: 1, boundary: 'tool_results', requestStep: 2, afterToolCallIds: ['call_1_0'], rendered: 'steer 1' });
      expect(d2.data).toMatchObject({ steerId: steerId(2), position: 2 });
      expect(req.data).toEqual({ step: 2, steerIds: [steerId(1), steerId(2)] });
    });

    it('nothing is delivered until every tool call of the step has finished', () => {
      const { events } = run([startCommand(), answerWithTools(1, 2), steer(1), toolDone(1, 0)]);
      expect(types(events).slice(-1)).toEqual(['ToolCallFinished']);
      const done = run([toolDone(1, 1)], run([startCommand(), answerWithTools(1, 2), steer(1), toolDone(1, 0)]).state);
      expect(types(done.events)).toEqual(['ToolCallFinished', 'SteeringDelivered', 'ModelRequested']);
      expect(done.events[1].data).toMatchObject({ afterToolCallIds: ['call_1_0', 'call_1_1'] });
    });

    it('a boundary with an empty queue just asks the model again', () => {
      const { events } = run([startCommand(), answerWithTools(1), toolDone(1)]);
      expect(types(events).slice(-2)).toEqual(['ToolCallFinished', 'ModelRequested']);
      expect(events.at(-1)!.data).toEqual({ step: 2, steerIds: [] });
    });

    it('the queue cap refuses one more steer with queue_full and no event', () => {
      const { state } = run([startCommand({ maxQueued: 2 }), steer(1), steer(2)]);
      expect(refusal(() => decide(steer(3), state))).toBe('queue_full');
    });

    it('positions are gapless per turn and never reused after a withdraw', () => {
      const { events } = run([startCommand(), steer(1), { type: 'WithdrawSteer', steerId: steerId(1) }, steer(2)]);
      expect(events.filter((e) => e.type === 'SteerQueued').map((e) => (e.data as { position: number }).position)).toEqual([1, 2]);
    });

    it('a steer text is trimmed and an empty one is refused', () => {
      const { events } = run([startCommand(), steer(1, '  go left  ')]);
      expect(events.at(-1)!.data).toMatchObject({ text: 'go left' });
      expect(refusal(() => run([startCommand(), steer(2, '   ')]))).toBe('invalid_request');
    });

    it('resubmitting a steer id appends nothing and keeps the receipt', () => {
      const { events, state } = run([startCommand(), steer(1), steer(1, 'other text')]);
      expect(types(events).filter((t) => t === 'SteerQueued')).toHaveLength(1);
      expect(receiptOf(state, steerId(1))).toMatchObject({ status: 'queued', text: 'steer 1', position: 1 });
    });
  });

  describe('text-only end', () => {
    it('steers queued at a text-only answer are delivered at turn_end and the model is asked again', () => {
      const { events } = run([startCommand(), steer(1), answerText(1)]);
      expect(types(events).slice(-3)).toEqual(['ModelResponded', 'SteeringDelivered', 'ModelRequested']);
      expect(events.at(-2)!.data).toMatchObject({ boundary: 'turn_end', step: 1, requestStep: 2, afterToolCallIds: [] });
    });

    it('a text-only answer with nothing queued completes the turn', () => {
      const { events, state } = run([startCommand(), answerText(1, 'all done')]);
      expect(types(events).slice(-1)).toEqual(['TurnCompleted']);
      expect(events.at(-1)!.data).toEqual({ steps: 1, text: 'all done' });
      expect(state.status).toBe('completed');
    });

    it('past maxContinuations the queued steers are dropped continuation_cap and the turn completes', () => {
      const { events } = run([startCommand({ maxContinuations: 1 }), steer(1), answerText(1), steer(2), steer(3), answerText(2)]);
      expect(types(events).slice(-3)).toEqual(['SteerDropped', 'SteerDropped', 'TurnCompleted']);
      expect(events.slice(-3, -1).map((e) => e.data)).toMatchObject([
        { steerId: steerId(2), reason: 'continuation_cap' },
        { steerId: steerId(3), reason: 'continuation_cap' },
      ]);
    });
  });

  describe('withdraw', () => {
    it('a queued steer is withdrawn with its text handed back', () => {
      const { events, state } = run([startCommand(), steer(1), { type: 'WithdrawSteer', steerId: steerId(1) }]);
      expect(events.at(-1)).toMatchObject({ type: 'SteerDropped', data: { reason: 'withdrawn', text: 'steer 1' } });
      expect(started(state).queue).toEqual([]);
    });

    it('a delivered steer cannot be withdrawn', () => {
      const { state } = run([startCommand(), answerWithTools(1), steer(1), toolDone(1)]);
      expect(refusal(() => decide({ type: 'WithdrawSteer', steerId: steerId(1) }, state))).toBe('already_delivered');
    });

    it('a withdrawn steer is not delivered at the next boundary', () => {
      const { events } = run([startCommand(), answerWithTools(1), steer(1), steer(2), { type: 'WithdrawSteer', steerId: steerId(1) }, toolDone(1)]);
      expect(events.filter((e) => e.type === 'SteeringDelivered').map((e) => (e.data as { steerId: string }).steerId)).toEqual([steerId(2)]);
    });
  });

  describe('turn end settles every queued steer first', () => {
    it('cancel drops queued steers turn_cancelled, in position order, before TurnCancelled', () => {
      const { events } = run([startCommand(), steer(1), steer(2), { type: 'CancelTurn', reason: 'user' }]);
      expect(types(events).slice(-3)).toEqual(['SteerDropped', 'SteerDropped', 'TurnCancelled']);
      expect(events.slice(-3, -1).map((e) => (e.data as { position: number }).position)).toEqual([1, 2]);
    });

    it('a cancel goes through a full queue', () => {
      const { events } = run([startCommand({ maxQueued: 1 }), steer(1), { type: 'CancelTurn', reason: 'user' }]);
      expect(types(events).slice(-1)).toEqual(['TurnCancelled']);
    });

    it('a tool error the model can act on is shown to it and the turn goes on', () => {
      const { events } = run([startCommand(), answerWithTools(1), steer(1), toolDone(1, 0, false, false)]);
      expect(types(events).slice(-3)).toEqual(['ToolCallFinished', 'SteeringDelivered', 'ModelRequested']);
      expect(events.at(-3)!.data).toMatchObject({ ok: false, error: { code: 'boom' } });
    });

    it('a fatal tool failure fails the turn and drops queued steers turn_failed', () => {
      const { events } = run([startCommand(), answerWithTools(1), steer(1), toolDone(1, 0, false)]);
      expect(types(events).slice(-3)).toEqual(['ToolCallFinished', 'SteerDropped', 'TurnFailed']);
      expect(events.at(-2)!.data).toMatchObject({ reason: 'turn_failed' });
      expect(events.at(-1)!.data).toMatchObject({ error: { code: 'tool_failed' } });
    });

    it('a model failure drops queued steers turn_failed', () => {
      const { events } = run([startCommand(), steer(1), { type: 'FailTurn', code: 'model_failed', message: 'HTTP 500' }]);
      expect(events.slice(-2).map((e) => e.type)).toEqual(['SteerDropped', 'TurnFailed']);
    });

    it('reaching maxSteps at a tool boundary drops max_steps and fails the turn', () => {
      const { events } = run([startCommand({ maxSteps: 1 }), answerWithTools(1), steer(1), toolDone(1)]);
      expect(types(events).slice(-2)).toEqual(['SteerDropped', 'TurnFailed']);
      expect(events.at(-2)!.data).toMatchObject({ reason: 'max_steps' });
      expect(events.at(-1)!.data).toMatchObject({ error: { code: 'max_steps' } });
    });

    it('a lost engine settles steers engine_lost before TurnFailed', () => {
      const { events } = run([startCommand(), steer(1), { type: 'AbandonTurn', reason: 'engine_lost' }]);
      expect(events.slice(-2).map((e) => [e.type, (e.data as { reason?: string }).reason])).toEqual([
        ['SteerDropped', 'engine_lost'],
        ['TurnFailed', undefined],
      ]);
    });

    it('after the turn ends a steer is refused turn_not_running', () => {
      const { state } = run([startCommand(), answerText(1)]);
      expect(refusal(() => decide(steer(9), state))).toBe('turn_not_running');
    });
  });

  it('a full scripted history satisfies I1–I6', () => {
    const { events } = run([startCommand(), answerWithTools(1), steer(1), steer(2), toolDone(1), steer(3), answerText(2), answerText(3)]);
    expect(checkInvariants(events.map((event) => ({ event })), { requireSettled: true })).toEqual([]);
  });
});

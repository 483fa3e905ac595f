import { DEFAULT_LIMITS, checkInvariants, type LoggedEvent } from '@steerline/contracts';
import { decide } from './turn.decider';
import { receiptOf } from './turn.state';
import { followUpOf } from './turn.steers';
import type { TurnCommand } from './turn.commands';
import { NEXT_TURN_ID, answerEnd, answerWithTools, run, startCommand, steer, steerId, steerWith, toolDone, types, refusal } from './turn.fixtures';

const edit = (n: number, text: string) => ({ type: 'EditSteer', steerId: steerId(n), text }) as const;
const expire = (n: number) => ({ type: 'ExpireSteer', steerId: steerId(n) }) as const;
const valid = (events: LoggedEvent['event'][]) => checkInvariants(events.map((event) => ({ event })), { requireSettled: true });

describe('turn decider: a steer’s own lifecycle (docs/design.md §2)', () => {
  describe('onTurnEnd', () => {
    it('at a text-only end, continue steers are delivered, drop steers dropped turn_ended, next_turn steers moved, drops in position order', () => {
      const { events, state } = run([
        startCommand(),
        steerWith(1, { onTurnEnd: 'next_turn' }),
        steer(2),
        steerWith(3, { onTurnEnd: 'drop' }),
        steerWith(4, { onTurnEnd: 'next_turn' }),
        steer(5),
        answerEnd(1),
      ]);
      expect(types(events).slice(-7)).toEqual(['ModelResponded', 'SteerDropped', 'SteerDropped', 'SteerDropped', 'SteeringDelivered', 'SteeringDelivered', 'ModelRequested']);
      expect(events.slice(-6, -3).map((e) => e.data)).toEqual([
        { steerId: steerId(1), text: 'steer 1', position: 1, reason: 'moved_to_next_turn', nextTurnId: NEXT_TURN_ID },
        { steerId: steerId(3), text: 'steer 3', position: 3, reason: 'turn_ended' },
        { steerId: steerId(4), text: 'steer 4', position: 4, reason: 'moved_to_next_turn', nextTurnId: NEXT_TURN_ID },
      ]);
      expect(events.at(-1)!.data).toEqual({ step: 2, steerIds: [steerId(2), steerId(5)] });
      expect(receiptOf(state, steerId(1))).toMatchObject({ status: 'dropped', reason: 'moved_to_next_turn', nextTurnId: NEXT_TURN_ID });
    });

    it('without continue steers the turn completes after the drops; a later text-only end moves to the same next turn', () => {
      const first = run([startCommand(), steerWith(1, { onTurnEnd: 'next_turn' }), steer(2), answerEnd(1)]);
      const second = run([steerWith(3, { onTurnEnd: 'next_turn' }), { type: 'RecordModelAnswer', step: 2, text: 'done', toolCalls: [], nextTurnId: '0190a000-0000-7000-8000-0000000000f2' }], first.state);
      expect(types(second.events).slice(-3)).toEqual(['ModelResponded', 'SteerDropped', 'TurnCompleted']);
      expect(second.events.at(-2)!.data).toMatchObject({ reason: 'moved_to_next_turn', nextTurnId: NEXT_TURN_ID });
      expect(valid([...first.events, ...second.events])).toEqual([]);
    });

    it('at a tool boundary every steer is delivered whatever its onTurnEnd', () => {
      const { events } = run([startCommand(), answerWithTools(1), steerWith(1, { onTurnEnd: 'drop' }), steerWith(2, { onTurnEnd: 'next_turn' }), toolDone(1)]);
      expect(types(events).slice(-3)).toEqual(['SteeringDelivered', 'SteeringDelivered', 'ModelRequested']);
    });

    it('a cancel drops drop and next_turn steers turn_cancelled like any other', () => {
      const { events } = run([startCommand(), steerWith(1, { onTurnEnd: 'next_turn' }), { type: 'CancelTurn', reason: 'x' }]);
      expect(events.at(-2)!.data).toMatchObject({ reason: 'turn_cancelled' });
      expect(events.at(-2)!.data).not.toHaveProperty('nextTurnId');
    });
  });

  describe('expiry', () => {
    it('a steer still queued at its deadline is dropped expired with its text; later it changes nothing', () => {
      const { events, state } = run([startCommand(), steerWith(1, { expiresAt: '2030-01-01T00:00:01.000Z' }), expire(1)]);
      expect(events.find((e) => e.type === 'SteerQueued')!.data).toMatchObject({ expiresAt: '2030-01-01T00:00:01.000Z' });
      expect(events.at(-1)!.data).toEqual({ steerId: steerId(1), text: 'steer 1', position: 1, reason: 'expired' });
      expect(decide(expire(1), state)).toEqual([]);
    });

    it('a deadline after the boundary delivered the steer changes nothing: expiry and boundary never both win', () => {
      const { state } = run([startCommand(), answerWithTools(1), steerWith(1, { expiresAt: '2030-01-01T00:00:01.000Z' }), toolDone(1)]);
      expect(receiptOf(state, steerId(1))!.status).toBe('delivered');
      expect(decide(expire(1), state)).toEqual([]);
    });
  });

  describe('edit', () => {
    it('a queued steer’s text is replaced, position unchanged, and the delivered text is the last edit', () => {
      const { events, state } = run([startCommand(), answerWithTools(1), steer(1), steer(2), edit(1, '  use tabs  '), edit(1, 'use spaces'), toolDone(1), answerEnd(2)]);
      const edits = events.filter((e) => e.type === 'SteerEdited').map((e) => e.data);
      expect(edits).toEqual([
        { steerId: steerId(1), text: 'use tabs', previousText: 'steer 1' },
        { steerId: steerId(1), text: 'use spaces', previousText: 'use tabs' },
      ]);
      const delivered = events.find((e) => e.type === 'SteeringDelivered')!.data;
      expect(delivered).toMatchObject({ steerId: steerId(1), position: 1, text: 'use spaces', rendered: 'use spaces' });
      expect(receiptOf(state, steerId(1))).toMatchObject({ status: 'delivered', text: 'use spaces', position: 1 });
      expect(valid(events)).toEqual([]);
    });

    it('the same text again appends nothing; bad text is invalid_request', () => {
      const { state } = run([startCommand(), steer(1)]);
      expect(decide(edit(1, 'steer 1'), state)).toEqual([]);
      expect(refusal(() => decide(edit(1, '   '), state)).code).toBe('invalid_request');
    });

    it('an edit after the boundary is already_delivered; after a drop steer_dropped with the text; unknown not_found', () => {
      const { state } = run([startCommand(), answerWithTools(1), steer(1), toolDone(1), steer(2), { type: 'WithdrawSteer', steerId: steerId(2) }]);
      expect(refusal(() => decide(edit(1, 'x'), state)).code).toBe('already_delivered');
      const dropped = refusal(() => decide(edit(2, 'x'), state));
      expect(dropped.code).toBe('steer_dropped');
      expect(dropped.details).toMatchObject({ reason: 'withdrawn', text: 'steer 2', position: 2 });
      expect(refusal(() => decide(edit(9, 'x'), state)).code).toBe('not_found');
    });

    it('an edited steer that is dropped hands back the edited text', () => {
      const { events } = run([startCommand(), steer(1), edit(1, 'better'), { type: 'CancelTurn', reason: 'x' }]);
      expect(events.at(-2)!.data).toMatchObject({ text: 'better', reason: 'turn_cancelled' });
    });
  });
});

describe('turn decider: queued turns (docs/design.md §8)', () => {
  const queue: TurnCommand = { type: 'QueueTurn', prompt: 'after that', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, position: 1 };

  it('a queued turn records TurnQueued, then starts with TurnStarted as seq 2', () => {
    const queued = run([queue]);
    expect(types(queued.events)).toEqual(['TurnQueued']);
    expect(queued.state.status).toBe('queued');
    const started = run([startCommand()], queued.state);
    expect(types(started.events)).toEqual(['TurnStarted', 'ModelRequested']);
    expect(started.events[0].seq).toBe(2);
    expect(valid([...queued.events, ...started.events, ...run([answerEnd(1)], started.state).events])).toEqual([]);
  });

  it('a queued turn cancelled never starts; steers and a second start are refused', () => {
    const queued = run([queue]);
    expect(refusal(() => decide(steer(1), queued.state)).code).toBe('turn_not_running');
    const cancelled = run([{ type: 'CancelTurn', reason: 'changed my mind' }], queued.state);
    expect(cancelled.events.map((e) => [e.type, e.data])).toEqual([['TurnCancelled', { steps: 0, reason: 'changed my mind' }]]);
    expect(refusal(() => decide(startCommand(), cancelled.state)).code).toBe('turn_already_running');
    expect(valid([...queued.events, ...cancelled.events])).toEqual([]);
  });

  it('the follow-up of a turn holds its moved steers’ texts in position order', () => {
    const { state } = run([startCommand(), steerWith(1, { onTurnEnd: 'next_turn' }), steerWith(2, { onTurnEnd: 'next_turn' }, 'and the docs'), answerEnd(1)]);
    expect(followUpOf(state)).toEqual({ turnId: NEXT_TURN_ID, prompt: 'steer 1\n\nand the docs' });
    expect(followUpOf(run([startCommand(), answerEnd(1)]).state)).toBeUndefined();
  });
});

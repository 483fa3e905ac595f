import { MAX_QUEUED_TURNS } from '@steerline/contracts';
import { refused } from '../../../../test/support/decider-specification';
import {
  advance,
  answered,
  cancelQueued,
  completed,
  conversationCreated,
  given,
  movedToNextTurn,
  ranAndCompleted,
  spec,
  start,
  steerQueued,
  turnCancelled,
  turnId,
  turnQueued,
  turnStarted,
} from './conversation.fixtures';

describe('conversation decider (docs/design.md §8)', () => {
  describe('starting a turn', () => {
    it('a conversation that does not exist has no turns to start', () => {
      given().when(start(1)).then(refused('not_found'));
    });

    it('in an idle conversation a turn starts at once, decided by the turn’s decider', () => {
      given([conversationCreated]).when(start(1)).then(turnStarted(1));
    });

    it('another tenant’s conversation is not found, so it cannot learn that a turn runs', () => {
      given([conversationCreated, ...turnStarted(1)])
        .when({ ...start(2, 'queue'), tenantId: 'someone-else' })
        .then(refused('not_found'));
    });

    it('while a turn runs a start is turn_already_running, naming it', () => {
      given([conversationCreated, ...turnStarted(1)]).when(start(2)).then(refused('turn_already_running', { turnId: turnId(1) }));
    });

    it('after a turn ended the next one starts', () => {
      given([conversationCreated, ...ranAndCompleted(1)]).when(start(2)).then(turnStarted(2));
    });
  });

  describe('queued turns', () => {
    it('with whenBusy queue a start behind a running turn is queued at the position the log gives', () => {
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1)]).when(start(3, 'queue')).then([turnQueued(3, 2)]);
    });

    it('a cancelled queued turn gives its place up: the next one queued takes position 1 again', () => {
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1), turnCancelled(2)]).when(start(3, 'queue')).then([turnQueued(3, 1)]);
    });

    it(`at most ${MAX_QUEUED_TURNS} turns wait: one more is turn_queue_full`, () => {
      const full = Array.from({ length: MAX_QUEUED_TURNS }, (_, i) => turnQueued(10 + i, i + 1));
      given([conversationCreated, ...turnStarted(1), ...full]).when(start(99, 'queue')).then(refused('turn_queue_full', { maxQueuedTurns: MAX_QUEUED_TURNS }));
    });

    it('a queued turn is cancelled with TurnCancelled and never starts', () => {
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1)]).when(cancelQueued(2)).then([turnCancelled(2)]);
    });

    it('a turn that is no longer queued cannot be cancelled as a queued one', () => {
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1), turnCancelled(2)]).when(cancelQueued(2)).then(refused('turn_not_running'));
      given([conversationCreated, ...turnStarted(1)]).when(cancelQueued(1)).then(refused('turn_not_running'));
    });

    it('another tenant cannot cancel a queued turn', () => {
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1)])
        .when({ ...cancelQueued(2), tenantId: 'someone-else' })
        .then(refused('not_found'));
    });

    it('a start while turns wait is refused without whenBusy, even when none runs', () => {
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1), completed(1, 1, 'done')]).when(start(3)).then(refused('turn_already_running', { turnId: turnId(2) }));
    });
  });

  describe('advancing after a turn ends', () => {
    it('the oldest queued turn starts with its own spec', () => {
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1), turnQueued(3, 2), ...[answered(1, 1, 'done'), completed(1, 1, 'done')]])
        .when(advance('engine-a'))
        .then(turnStarted(2, 'engine-a'));
    });

    it('a cancelled queued turn is skipped', () => {
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1), turnQueued(3, 2), turnCancelled(2), answered(1, 1, 'done'), completed(1, 1, 'done')])
        .when(advance())
        .then(turnStarted(3));
    });

    it('nothing queued, nothing to do; nor while a turn runs', () => {
      given([conversationCreated, ...ranAndCompleted(1)]).when(advance()).then([]);
      given([conversationCreated, ...turnStarted(1), turnQueued(2, 1)]).when(advance()).then([]);
    });

    it('a turn that moved next_turn steers: its follow-up is queued at the end of the queue with the moved texts in position order, then the oldest starts', () => {
      const next = turnId(7);
      const facts = [
        conversationCreated,
        ...turnStarted(1),
        turnQueued(2, 1),
        steerQueued(1, 1, 'then the docs', 1, 'next_turn'),
        steerQueued(1, 2, 'and the tests', 2, 'next_turn'),
        answered(1, 1, 'done'),
        movedToNextTurn(1, 1, 'then the docs', 1, next),
        movedToNextTurn(1, 2, 'and the tests', 2, next),
        completed(1, 1, 'done'),
      ];
      given(facts)
        .when(advance())
        .then([{ ...turnQueued(7, 2, 'then the docs\n\nand the tests', turnId(1)) }, ...turnStarted(2)]);
    });

    it('with nothing else queued the follow-up itself starts', () => {
      const next = turnId(7);
      const facts = [conversationCreated, ...turnStarted(1), steerQueued(1, 1, 'later', 1, 'next_turn'), answered(1, 1, 'done'), movedToNextTurn(1, 1, 'later', 1, next), completed(1, 1, 'done')];
      const events = given(facts).when(advance()).events();
      expect(events.map((e) => [e.type, e.turnId])).toEqual([
        ['TurnQueued', next],
        ['TurnStarted', next],
        ['ModelRequested', next],
      ]);
      expect(events[1].data).toMatchObject({ ...spec('later') });
    });

    it('a follow-up is never refused by the cap: the moved texts must not be lost', () => {
      const next = turnId(7);
      const full = Array.from({ length: MAX_QUEUED_TURNS }, (_, i) => turnQueued(10 + i, i + 1));
      const facts = [conversationCreated, ...turnStarted(1), ...full, steerQueued(1, 1, 'later', 1, 'next_turn'), answered(1, 1, 'done'), movedToNextTurn(1, 1, 'later', 1, next), completed(1, 1, 'done')];
      const events = given(facts).when(advance()).events();
      expect(events[0]).toMatchObject({ type: 'TurnQueued', turnId: next, data: { position: MAX_QUEUED_TURNS + 1 } });
      expect(events.slice(1).map((e) => [e.type, e.turnId])).toEqual([
        ['TurnStarted', turnId(10)],
        ['ModelRequested', turnId(10)],
      ]);
    });
  });
});

import { checkInvariants } from '@steerline/contracts';
import { refused } from '../../../../test/support/decider-specification';
import { decide, type ConversationDraft } from './conversation.decider';
import {
  FOLLOW_UP,
  adopt,
  answered,
  cancelQueued,
  completed,
  conversationCreated,
  given,
  logOf,
  movedToNextTurn,
  ranAndCompleted,
  steerQueued,
  toolStarted,
  turnCancelled,
  turnId,
  turnQueued,
  turnResumed,
  turnStarted,
  type Fact,
} from './conversation.fixtures';

/*
 * What happens when an engine dies at each moment the fault suite
 * (test/faults/engine-crash, rolling-restart, scale-out) found a bug in, decided in
 * milliseconds. An engine's claim on a turn outlives it; another engine's reaper
 * decides AdoptConversation on the log (docs/design.md §10), and every append is
 * fenced by the subject's last sequence, so of two writers one wins whole.
 */

/** The conversation's subject as the fence sees it: an append names the last sequence it read. */
class FencedLog {
  constructor(readonly facts: Fact[]) {}
  read() {
    return { state: logOf(this.facts).state, lastSeq: this.facts.length };
  }
  append(lastSeq: number, drafts: ConversationDraft[]): 'appended' | 'stale' {
    if (lastSeq !== this.facts.length) return 'stale';
    this.facts.push(...drafts);
    return 'appended';
  }
}

const decided = (command: Parameters<typeof decide>[0], state: Parameters<typeof decide>[1]): ConversationDraft[] => {
  const decision = decide(command, state);
  if (!decision.ok) throw new Error(`refused: ${decision.refusal.code}`);
  return decision.events;
};
const valid = (facts: Fact[]) => checkInvariants(logOf(facts).events.map((event) => ({ event })));

describe('crash windows: an engine killed …', () => {
  describe('… mid-step', () => {
    it('inside a tool that may not run twice: the adopter resumes the turn, the call ends interrupted, and the turn queued behind it stays queued', () => {
      const facts = [conversationCreated, ...turnStarted(1), answered(1, 1, '', [{ id: 'call_1', name: 'charge' }]), toolStarted(1, 1, 'call_1', 'charge'), turnQueued(2, 1)];
      const events = given(facts).when(adopt(1, 'engine-a')).events();
      expect(events.map((e) => [e.type, e.turnId])).toEqual([
        ['TurnResumed', turnId(1)],
        ['ToolCallFinished', turnId(1)],
        ['ModelRequested', turnId(1)],
      ]);
      expect(events[0].data).toEqual({ engineId: 'engine-b', previousEngineId: 'engine-a', attempt: 1 });
      expect(events[1].data).toMatchObject({ ok: false, error: { code: 'interrupted' } });
    });

    it('inside an idempotent tool: TurnResumed alone, the adopter runs the call again', () => {
      const facts = [conversationCreated, ...turnStarted(1), answered(1, 1, '', [{ id: 'call_1', name: 'sleep' }]), toolStarted(1, 1, 'call_1')];
      given(facts).when(adopt(1, 'engine-a')).then([turnResumed(1, 'engine-b', 'engine-a')]);
    });

    it('while appending an answer’s calls: the start the log lacks is decided again', () => {
      const facts = [conversationCreated, ...turnStarted(1), answered(1, 1, '', [{ id: 'call_1', name: 'sleep' }])];
      given(facts).when(adopt(1, 'engine-a')).then([turnResumed(1, 'engine-b', 'engine-a'), toolStarted(1, 1, 'call_1')]);
    });

    it('past the resume limit the turn fails engine_lost and, in the same decision, the turn queued behind it starts', () => {
      const facts = [conversationCreated, ...turnStarted(1), steerQueued(1, 1, 'hurry', 1), turnQueued(2, 1), turnResumed(1, 'engine-b', 'engine-a', 1)];
      const events = given(facts).when(adopt(1, 'engine-b', 'engine-c', 1)).events();
      expect(events.map((e) => [e.type, e.turnId])).toEqual([
        ['SteerDropped', turnId(1)],
        ['TurnFailed', turnId(1)],
        ['TurnStarted', turnId(2)],
        ['ModelRequested', turnId(2)],
      ]);
      expect(valid([...facts, ...events])).toEqual([]);
    });
  });

  describe('… between a turn’s end and the next queued turn’s start', () => {
    it('the ended turn kept its claim: the adopter starts the oldest queued turn', () => {
      given([conversationCreated, ...ranAndCompleted(1), turnQueued(2, 1), turnQueued(3, 2)].sort(queuedFirst))
        .when(adopt(1, 'engine-a'))
        .then(turnStarted(2, 'engine-b'));
    });

    it('before the ended turn’s follow-up was queued: the adopter queues it behind the others, then starts the oldest', () => {
      const facts = [
        conversationCreated,
        ...turnStarted(1),
        turnQueued(2, 1),
        steerQueued(1, 1, 'then sum it up', 1, 'next_turn'),
        answered(1, 1, 'first done'),
        movedToNextTurn(1, 1, 'then sum it up', 1, FOLLOW_UP),
        completed(1, 1, 'first done'),
      ];
      const events = given(facts).when(adopt(1, 'engine-a')).events();
      expect(events.map((e) => [e.type, e.turnId])).toEqual([
        ['TurnQueued', FOLLOW_UP],
        ['TurnStarted', turnId(2)],
        ['ModelRequested', turnId(2)],
      ]);
      expect(events[0].data).toMatchObject({ prompt: 'then sum it up', position: 2, fromTurnId: turnId(1) });
      expect(valid([...facts, ...events])).toEqual([]);
    });

    it('after the follow-up was queued but before it started: the follow-up starts, and is not queued twice', () => {
      const facts = [
        conversationCreated,
        ...turnStarted(1),
        steerQueued(1, 1, 'later', 1, 'next_turn'),
        answered(1, 1, 'done'),
        { ...movedToNextTurn(1, 1, 'later', 1, FOLLOW_UP) },
        completed(1, 1, 'done'),
        { ...turnQueued(0, 1, 'later', turnId(1)), turnId: FOLLOW_UP },
      ];
      const events = given(facts).when(adopt(1, 'engine-a')).events();
      expect(events.map((e) => [e.type, e.turnId])).toEqual([
        ['TurnStarted', FOLLOW_UP],
        ['ModelRequested', FOLLOW_UP],
      ]);
    });

    it('after claiming the next turn but before its TurnStarted: that claim is found too, and the turn starts', () => {
      given([conversationCreated, ...ranAndCompleted(1), turnQueued(2, 1)].sort(queuedFirst))
        .when(adopt(2, 'engine-a'))
        .then(turnStarted(2, 'engine-b'));
    });

    it('with nothing queued and no follow-up there is nothing to adopt', () => {
      given([conversationCreated, ...ranAndCompleted(1)]).when(adopt(1, 'engine-a')).then([]);
    });
  });

  describe('… and two engines adopt at once', () => {
    it('a running turn: both decide the same resume from the same read; the fence lets one append, and the other, reading again, finds its claim stale', () => {
      const log = new FencedLog([conversationCreated, ...turnStarted(1), turnQueued(2, 1)]);
      const [b, c] = [log.read(), log.read()];
      const byB = decided(adopt(1, 'engine-a', 'engine-b'), b.state);
      const byC = decided(adopt(1, 'engine-a', 'engine-c'), c.state);
      expect(byC.map((e) => e.type)).toEqual(byB.map((e) => e.type));
      expect(log.append(b.lastSeq, byB)).toBe('appended');
      expect(log.append(c.lastSeq, byC)).toBe('stale');
      given(log.facts).when(adopt(1, 'engine-a', 'engine-c')).then(refused('claim_stale', { engineId: 'engine-b' }));
      expect(valid(log.facts)).toEqual([]);
    });

    it('an ended turn: both decide to start the next; one start is appended, the other finds that turn running and does nothing', () => {
      const log = new FencedLog([conversationCreated, ...ranAndCompleted(1), turnQueued(2, 1)].sort(queuedFirst));
      const [b, c] = [log.read(), log.read()];
      expect(log.append(b.lastSeq, decided(adopt(1, 'engine-a', 'engine-b'), b.state))).toBe('appended');
      expect(log.append(c.lastSeq, decided(adopt(1, 'engine-a', 'engine-c'), c.state))).toBe('stale');
      given(log.facts).when(adopt(1, 'engine-a', 'engine-c')).then([]);
      expect(logOf(log.facts).events.filter((e) => e.type === 'TurnStarted').map((e) => e.turnId)).toEqual([turnId(1), turnId(2)]);
    });
  });

  describe('… while a queued turn’s cancel is in flight', () => {
    const before = [conversationCreated, ...turnStarted(1), turnQueued(2, 1), turnQueued(3, 2), answered(1, 1, 'done'), completed(1, 1, 'done')];

    it('the cancel reached the log first: the adopter skips the cancelled turn and starts the next', () => {
      given([...before, turnCancelled(2)]).when(adopt(1, 'engine-a')).then(turnStarted(3, 'engine-b'));
    });

    it('the adopter started the turn first: the cancel, decided on the log, finds it no longer queued', () => {
      const log = new FencedLog([...before]);
      const read = log.read();
      expect(log.append(read.lastSeq, decided(adopt(1, 'engine-a'), read.state))).toBe('appended');
      given(log.facts).when(cancelQueued(2)).then(refused('turn_not_running'));
    });

    it('a cancel decided before the adoption and appended after it is fenced: exactly one of the two wins', () => {
      const log = new FencedLog([...before]);
      const cancelRead = log.read();
      const cancel = decided(cancelQueued(2), cancelRead.state);
      const adoptRead = log.read();
      expect(log.append(adoptRead.lastSeq, decided(adopt(1, 'engine-a'), adoptRead.state))).toBe('appended');
      expect(log.append(cancelRead.lastSeq, cancel)).toBe('stale');
      const events = logOf(log.facts).events;
      expect(events.filter((e) => e.turnId === turnId(2)).map((e) => e.type)).toEqual(['TurnQueued', 'TurnStarted', 'ModelRequested']);
    });
  });
});

/** Queued turns go in before the running turn's end, as an owner appends them (the helpers list them per turn). */
function queuedFirst(a: Fact, b: Fact): number {
  const rank = (f: Fact) => (f.type === 'ConversationCreated' ? 0 : f.type === 'TurnStarted' || f.type === 'ModelRequested' ? 1 : f.type === 'TurnQueued' ? 2 : 3);
  return rank(a) - rank(b);
}

import { checkInvariants, type LoggedEvent } from './invariants';
import { loadFixtures } from './fixtures';
import type { SteerlineEvent } from './events';

/** A valid turn built from the golden fixtures: started, tool call, one steer delivered, completed. */
function validTurn(): SteerlineEvent[] {
  const f = Object.fromEntries(loadFixtures().map((x) => [x.type, JSON.parse(x.json) as SteerlineEvent]));
  const seq = (e: SteerlineEvent, n: number, data?: object) => ({ ...e, seq: n, data: { ...e.data, ...data } }) as SteerlineEvent;
  const steerId = (f.SteerQueued.data as { steerId: string }).steerId;
  return [
    seq(f.TurnStarted, 1),
    seq(f.ModelRequested, 2),
    seq(f.ModelResponded, 3),
    seq(f.ToolCallStarted, 4),
    seq(f.SteerQueued, 5),
    seq(f.ToolCallFinished, 6),
    seq(f.SteeringDelivered, 7),
    seq(f.ModelRequested, 8, { step: 2, steerIds: [steerId] }),
    seq(f.ModelResponded, 9, { step: 2, toolCalls: [], text: 'done' }),
    seq(f.TurnCompleted, 10),
  ];
}

const logged = (events: SteerlineEvent[]): LoggedEvent[] => events.map((event, i) => ({ event, streamSeq: i + 1 }));
const found = (events: SteerlineEvent[]) => checkInvariants(logged(events), { requireSettled: true }).map((v) => v.invariant);

describe('invariant checker', () => {
  it('a valid turn has no violation', () => {
    expect(checkInvariants(logged(validTurn()), { requireSettled: true })).toEqual([]);
  });

  it('a gap in seq or a missing terminal event violates I1', () => {
    const events = validTurn();
    expect(found([...events.slice(0, 3), ...events.slice(4)].map((e, i) => e))).toContain('I1');
    expect(found(events.slice(0, -1))).toContain('I1');
  });

  it('a steer delivered twice, or never settled, violates I2', () => {
    const events = validTurn();
    const twice = [...events.slice(0, 7), { ...events[6], seq: 8 }, ...events.slice(7).map((e) => ({ ...e, seq: e.seq + 1 }))] as SteerlineEvent[];
    expect(found(twice)).toContain('I2');
    const unsettled = events.filter((e) => e.type !== 'SteeringDelivered').map((e, i) => ({ ...e, seq: i + 1 })) as SteerlineEvent[];
    expect(found(unsettled)).toContain('I2');
  });

  it('a delivery before the step’s tool results violates I4, and before any answer I5', () => {
    const events = validTurn();
    const early = [events[0], events[1], events[2], events[3], events[4], events[6], events[5], ...events.slice(7)].map((e, i) => ({ ...e, seq: i + 1 })) as SteerlineEvent[];
    expect(found(early)).toContain('I4');
    const beforeAnswer = [events[0], events[1], events[4], events[6], events[2], events[3], events[5], ...events.slice(7)].map((e, i) => ({ ...e, seq: i + 1 })) as SteerlineEvent[];
    expect(found(beforeAnswer)).toContain('I5');
  });

  it('a model request that does not carry the delivered steers violates I6', () => {
    const events = validTurn();
    events[7] = { ...events[7], data: { step: 2, steerIds: [] } } as SteerlineEvent;
    expect(found(events)).toContain('I6');
  });

  it('an interrupt delivery follows a cut answer (or a tool step whose calls all have results); a cut answer also recorded as an answer violates `answers`', () => {
    const f = Object.fromEntries(loadFixtures().map((x) => [x.type, JSON.parse(x.json) as SteerlineEvent]));
    const events = validTurn();
    const cut = [events[0], events[1], { ...f.ModelInterrupted, data: { step: 1, partialText: 'half' } }, events[4], { ...events[6], data: { ...events[6].data, afterToolCallIds: [] } }, ...events.slice(7)] as SteerlineEvent[];
    const renumbered = (list: SteerlineEvent[]) => list.map((e, i) => ({ ...e, seq: i + 1 })) as SteerlineEvent[];
    expect(found(renumbered(cut))).toEqual([]);
    expect(found(renumbered([...cut.slice(0, 3), events[2], ...cut.slice(3)]))).toContain('answers');
    const interruptAfterText = [...events.slice(0, 2), { ...events[2], data: { ...events[2].data, toolCalls: [] } }, events[4], events[6], ...events.slice(7)] as SteerlineEvent[];
    expect(found(renumbered(interruptAfterText))).toContain('I4');
  });

  describe('I7: approvals', () => {
    const f = () => Object.fromEntries(loadFixtures().map((x) => [x.type, JSON.parse(x.json) as SteerlineEvent]));
    /** validTurn with its tool call waiting for approval before it starts. */
    const withApproval = (decision: 'approved' | 'denied' | 'none', startAnyway = true): SteerlineEvent[] => {
      const events = validTurn();
      const fx = f();
      const inserted: SteerlineEvent[] = [fx.ToolApprovalRequested];
      if (decision !== 'none') inserted.push({ ...fx.ToolApprovalDecided, data: { ...fx.ToolApprovalDecided.data, decision } } as SteerlineEvent);
      const started = startAnyway ? [events[3]] : [];
      return [...events.slice(0, 3), ...inserted, ...started, ...events.slice(4)].map((e, i) => ({ ...e, seq: i + 1 })) as SteerlineEvent[];
    };

    it('an approved call that starts after its decision has no violation', () => {
      expect(found(withApproval('approved'))).toEqual([]);
    });

    it('a call that starts without an approved decision, or a request never decided, violates I7', () => {
      expect(found(withApproval('denied'))).toContain('I7');
      expect(found(withApproval('none'))).toContain('I7');
    });

    it('a second decision on one request violates I7', () => {
      const events = withApproval('approved');
      const twice = [...events.slice(0, 5), { ...events[4], seq: 6 }, ...events.slice(5).map((e) => ({ ...e, seq: e.seq + 1 }))] as SteerlineEvent[];
      expect(found(twice)).toContain('I7');
    });
  });
});

import { announcementsFor } from './announce';
import { applyEvent, applyLive, emptyTimeline, runningTurn, type StreamEvent, type Timeline } from './timeline';

const T = '0190c6a0-0000-7000-8000-000000000001';
const S1 = '0190c6a0-0000-7000-8000-0000000000a1';
const S2 = '0190c6a0-0000-7000-8000-0000000000a2';
let id = 0;
const ev = (type: string, data: object, turnId = T): StreamEvent => ({ id: ++id, type, event: { turnId, data } });
const replay = (events: StreamEvent[], from: Timeline = emptyTimeline()) => events.reduce(applyEvent, from);

describe('the console timeline, built from the event stream alone', () => {
  beforeEach(() => (id = 0));

  it('shows steps, tool calls and steers in order, a steer going from queued at position n to delivered at step n', () => {
    const t = replay([
      ev('TurnStarted', { prompt: 'work' }),
      ev('ModelRequested', { step: 1 }),
      ev('ModelResponded', { step: 1, text: '', toolCalls: [{ id: 'c1', name: 'sleep', args: { ms: 10 } }] }),
      ev('ToolCallStarted', { step: 1, toolCallId: 'c1', name: 'sleep', args: { ms: 10 } }),
      ev('SteerQueued', { steerId: S1, text: 'go left', position: 1, queueDepth: 1 }),
      ev('SteerQueued', { steerId: S2, text: 'or right', position: 2, queueDepth: 2 }),
      ev('SteerDropped', { steerId: S2, text: 'or right', position: 2, reason: 'withdrawn' }),
      ev('ToolCallFinished', { step: 1, toolCallId: 'c1', name: 'sleep', ok: true, output: 'slept', durationMs: 11 }),
      ev('SteeringDelivered', { steerId: S1, text: 'go left', position: 1, step: 1, boundary: 'tool_results' }),
      ev('ModelRequested', { step: 2 }),
    ]);
    const turn = runningTurn(t)!;
    expect(turn.items.map((i) => i.kind)).toEqual(['step', 'tool', 'steer', 'steer', 'step']);
    expect(turn.steers[S1]).toMatchObject({ status: 'delivered', step: 1, position: 1 });
    expect(turn.steers[S2]).toMatchObject({ status: 'dropped', reason: 'withdrawn', text: 'or right' });
    expect(turn.tools.c1).toMatchObject({ state: 'ok', durationMs: 11 });
  });

  it('applies an event replayed after a reconnect once', () => {
    const events = [ev('TurnStarted', { prompt: 'p' }), ev('ModelRequested', { step: 1 })];
    const once = replay(events);
    expect(replay(events, once)).toBe(once);
    expect(once.turns[0].items).toHaveLength(1);
  });

  it('writes the answer as deltas arrive, then keeps the recorded text; progress only while the call runs', () => {
    let t = replay([ev('TurnStarted', { prompt: 'p' }), ev('ModelRequested', { step: 1 })]);
    t = applyLive(t, { type: 'ModelDelta', data: { turnId: T, step: 1, index: 0, text: 'Hel' } });
    t = applyLive(t, { type: 'ModelDelta', data: { turnId: T, step: 1, index: 1, text: 'lo' } });
    expect(t.turns[0].steps[1].text).toBe('Hello');
    t = applyEvent(t, ev('ModelResponded', { step: 1, text: 'Hello!', toolCalls: [{ id: 'c1', name: 'sleep', args: {} }] }));
    t = applyLive(t, { type: 'ModelDelta', data: { turnId: T, step: 1, index: 2, text: 'late' } });
    expect(t.turns[0].steps[1].text).toBe('Hello!');
    t = applyEvent(t, ev('ToolCallStarted', { step: 1, toolCallId: 'c1', name: 'sleep', args: {} }));
    t = applyLive(t, { type: 'ToolProgress', data: { turnId: T, step: 1, toolCallId: 'c1', progress: 0.5, message: 'half' } });
    expect(t.turns[0].tools.c1).toMatchObject({ progress: 0.5, message: 'half' });
  });

  it('shows approvals, resumes, edits and queued follow-up turns', () => {
    const next = '0190c6a0-0000-7000-8000-000000000002';
    const t = replay([
      ev('TurnStarted', { prompt: 'p' }),
      ev('ToolApprovalRequested', { step: 1, toolCallId: 'c1', name: 'fail', args: {} }),
      ev('SteerQueued', { steerId: S1, text: 'a', position: 1, queueDepth: 1 }),
      ev('SteerEdited', { steerId: S1, text: 'b', previousText: 'a' }),
      ev('TurnResumed', { engineId: 'e2', previousEngineId: 'e1', attempt: 1 }),
      ev('TurnQueued', { prompt: 'later', position: 1 }, next),
    ]);
    expect(t.turns[0].tools.c1.state).toBe('awaiting_approval');
    expect(t.turns[0].steers[S1]).toMatchObject({ text: 'b', edited: true });
    expect(t.turns[0].items.at(-1)).toEqual({ kind: 'resumed', engineId: 'e2', previousEngineId: 'e1', attempt: 1 });
    expect(t.turns[1]).toMatchObject({ status: 'queued', queuePosition: 1 });
    const denied = applyEvent(t, ev('ToolApprovalDecided', { step: 1, toolCallId: 'c1', decision: 'denied', by: 'user' }));
    expect(denied.turns[0].tools.c1).toMatchObject({ state: 'failed', approval: 'denied' });
  });

  it('keeps the agent and version a turn runs, from its TurnQueued or TurnStarted', () => {
    const t = replay([
      ev('TurnStarted', { prompt: 'p', agent: { name: 'reviewer', version: 3 } }),
      ev('TurnQueued', { prompt: 'q', position: 1, agent: { name: 'writer', version: 1 } }, S1),
      ev('TurnStarted', { prompt: 'q' }, S1),
      ev('TurnStarted', { prompt: 'no agent' }, S2),
    ]);
    expect(t.turns.map((x) => x.agent)).toEqual([{ name: 'reviewer', version: 3 }, { name: 'writer', version: 1 }, undefined]);
  });

  it('announces receipt changes and approvals, not the history replayed on opening', () => {
    const seen = { seen: new Map<string, string>() };
    let t = replay([ev('TurnStarted', { prompt: 'p' }), ev('SteerQueued', { steerId: S1, text: 'old', position: 1, queueDepth: 1 })]);
    expect(announcementsFor(seen, t)).toEqual([]);
    t = applyEvent(t, ev('SteerQueued', { steerId: S2, text: 'new', position: 2, queueDepth: 2 }));
    expect(announcementsFor(seen, t)).toEqual(['Steer 2 queued at position 2.']);
    t = applyEvent(t, ev('SteeringDelivered', { steerId: S2, text: 'new', position: 2, step: 1, boundary: 'tool_results' }));
    t = applyEvent(t, ev('ToolApprovalRequested', { step: 2, toolCallId: 'c9', name: 'echo', args: {} }));
    expect(announcementsFor(seen, t)).toEqual(['Steer 2 delivered at step 1.', 'Approval needed: echo.']);
  });

  it('an answer cut by an interrupt shows the recorded partial text, marked interrupted; an urgent steer says what it waits for', () => {
    let t = replay([ev('TurnStarted', { prompt: 'p' }), ev('ModelRequested', { step: 1, steerIds: [] })]);
    t = applyLive(t, { type: 'ModelDelta', data: { turnId: T, step: 1, index: 0, text: 'I will del' } });
    t = applyEvent(t, ev('SteerQueued', { steerId: S1, text: 'stop', position: 1, queueDepth: 1, urgency: 'interrupt', waitingFor: ['c1'] }));
    t = applyEvent(t, ev('ModelInterrupted', { step: 1, partialText: 'I will' }));
    t = applyLive(t, { type: 'ModelDelta', data: { turnId: T, step: 1, index: 1, text: 'ete' } });
    expect(t.turns[0].steps[1]).toMatchObject({ text: 'I will', interrupted: true });
    expect(t.turns[0].steers[S1]).toMatchObject({ urgent: true, waitingFor: ['c1'] });
  });
});

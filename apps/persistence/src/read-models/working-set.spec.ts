import { DEFAULT_LIMITS, SteerlineEventSchema, eventVersion, uuidv7, type EventData, type EventType, type SteerlineEvent } from '@steerline/contracts';
import { applyEvent, workingSet, type WorkingSet } from './working-set';

const conversationId = uuidv7();
const turnId = uuidv7();
let seq = 0;
const at = (n: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, n)).toISOString();

function event<T extends Exclude<EventType, 'ConversationCreated'>>(type: T, data: EventData<T>, over: Partial<SteerlineEvent> = {}): SteerlineEvent {
  seq += 1;
  return SteerlineEventSchema.parse({ id: uuidv7(), type, version: eventVersion(type), tenantId: 'default', conversationId, turnId, seq, at: at(seq), data, ...over }) as SteerlineEvent;
}

const started = () => event('TurnStarted', { prompt: 'hi', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, engineId: 'e' });
const queued = (steerId: string, position: number) => event('SteerQueued', { steerId, text: `steer ${position}`, position, queueDepth: position });
const dropped = (steerId: string, position: number) => event('SteerDropped', { steerId, text: `steer ${position}`, position, reason: 'withdrawn' });

function run(...events: SteerlineEvent[]): { ws: WorkingSet; outcomes: string[] } {
  const ws = workingSet();
  return { ws, outcomes: events.map((e) => applyEvent(ws, e)) };
}

beforeEach(() => (seq = 0));

describe('applying events to the read models', () => {
  it('a turn start creates its conversation even without ConversationCreated', () => {
    const { ws } = run(started());
    expect(ws.conversations.get(conversationId)).toMatchObject({ tenantId: 'default', messageCount: 1 });
    expect(ws.messages).toEqual([expect.objectContaining({ ordinal: 0, role: 'user', content: 'hi', steerId: null })]);
  });

  it('a tool call waiting for approval is listed on its turn until it is decided', () => {
    const start = started();
    const request = event('ToolApprovalRequested', { step: 1, toolCallId: 'call_1_0', name: 'sleep', args: { ms: 5 } });
    const { ws } = run(start, request);
    expect(ws.turns.get(turnId)!.pendingApprovals).toEqual([{ toolCallId: 'call_1_0', step: 1, name: 'sleep', args: { ms: 5 }, requestedAt: request.at }]);
    applyEvent(ws, event('ToolApprovalDecided', { step: 1, toolCallId: 'call_1_0', decision: 'denied', by: 'user' }));
    expect(ws.turns.get(turnId)!.pendingApprovals).toEqual([]);
  });

  it('a queued turn has a row from TurnQueued, running from its TurnStarted, and the prompt joins the transcript only then', () => {
    const model = { provider: 'scripted' as const, name: 'scripted', script: [] };
    const queued = event('TurnQueued', { prompt: 'later', model, limits: DEFAULT_LIMITS, position: 1 });
    const { ws, outcomes } = run(queued);
    expect(outcomes).toEqual(['applied']);
    expect(ws.turns.get(turnId)).toMatchObject({ status: 'queued', prompt: 'later', startedAt: queued.at });
    expect(ws.messages).toEqual([]);
    const start = started();
    expect(applyEvent(ws, start)).toBe('applied');
    expect(ws.turns.get(turnId)).toMatchObject({ status: 'running', startedAt: start.at, lastEventSeq: 2 });
    expect(ws.messages.map((m) => m.content)).toEqual(['hi']);
  });

  it('an edit replaces a queued steer’s text; a move records the next turn', () => {
    const a = uuidv7();
    const next = uuidv7();
    const { ws } = run(started(), queued(a, 1), event('SteerEdited', { steerId: a, text: 'better', previousText: 'steer 1' }));
    expect(ws.steers.get(a)).toMatchObject({ status: 'queued', text: 'better' });
    applyEvent(ws, event('SteerDropped', { steerId: a, text: 'better', position: 1, reason: 'moved_to_next_turn', nextTurnId: next }));
    expect(ws.steers.get(a)).toMatchObject({ status: 'dropped', reason: 'moved_to_next_turn', nextTurnId: next, text: 'better' });
  });

  it('an edit of a steer the read model never saw is an orphan', () => {
    const { outcomes } = run(started(), event('SteerEdited', { steerId: uuidv7(), text: 'x', previousText: 'y' }));
    expect(outcomes).toEqual(['applied', 'orphan']);
  });

  it('steer counts follow each steer from queued to its one settlement', () => {
    const a = uuidv7();
    const b = uuidv7();
    const { ws } = run(started(), queued(a, 1), queued(b, 2), dropped(a, 1));
    expect(ws.turns.get(turnId)).toMatchObject({ queued: 1, delivered: 0, dropped: 1 });
    expect(ws.steers.get(a)).toMatchObject({ status: 'dropped', reason: 'withdrawn', settledAt: at(4) });
  });

  it('a second settlement of the same steer changes neither the steer nor the counts', () => {
    const a = uuidv7();
    const { ws } = run(started(), queued(a, 1), dropped(a, 1), event('SteerDropped', { steerId: a, text: 'steer 1', position: 1, reason: 'turn_cancelled' }));
    expect(ws.steers.get(a)).toMatchObject({ status: 'dropped', reason: 'withdrawn' });
    expect(ws.turns.get(turnId)).toMatchObject({ queued: 0, dropped: 1 });
  });

  it('an event whose turn seq was already applied is a duplicate and changes nothing', () => {
    const a = uuidv7();
    const start = started();
    const twice = queued(a, 1);
    const { ws, outcomes } = run(start, twice, twice);
    expect(outcomes).toEqual(['applied', 'applied', 'duplicate']);
    expect(ws.turns.get(turnId)).toMatchObject({ queued: 1, lastEventSeq: 2 });
  });

  it('an event of a turn the read models do not hold stalls its conversation: its TurnStarted is missing', () => {
    seq = 4;
    const { ws, outcomes } = run(event('ModelRequested', { step: 1, steerIds: [] }));
    expect(outcomes).toEqual(['gap']);
    expect(ws.stalled.get(conversationId)).toMatchObject({ turnId, expectedSeq: 1, foundSeq: 5 });
  });

  it('a turn seq that skips one stalls the conversation, parks what follows and writes no message past the hole', () => {
    const start = started();
    seq += 1; // seq 2 never reaches the projector
    const responded = event('ModelResponded', { step: 1, text: 'after the hole', toolCalls: [] });
    const completed = event('TurnCompleted', { steps: 1, text: 'after the hole' });
    const { ws, outcomes } = run(start, responded, completed);
    expect(outcomes).toEqual(['applied', 'gap', 'stalled']);
    expect(ws.stalled.get(conversationId)).toMatchObject({ turnId, eventId: responded.id, expectedSeq: 2, foundSeq: 3 });
    expect(ws.messages.map((m) => m.content)).toEqual(['hi']);
    expect(ws.turns.get(turnId)).toMatchObject({ status: 'running', lastEventSeq: 1 });
  });

  it('a stalled conversation does not hold up another one', () => {
    const ws = workingSet();
    const other = uuidv7();
    ws.stalled.set(conversationId, { conversationId, tenantId: 'default', turnId, eventId: uuidv7(), expectedSeq: 2, foundSeq: 3, eventAt: at(1) });
    seq = 0;
    expect(applyEvent(ws, started())).toBe('stalled');
    seq = 0;
    expect(applyEvent(ws, event('TurnStarted', { prompt: 'elsewhere', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, engineId: 'e' }, { conversationId: other, turnId: uuidv7() }))).toBe('applied');
  });

  it('an event naming another tenant for an existing conversation is an orphan', () => {
    const start = started();
    const { ws } = run(start);
    expect(applyEvent(ws, event('ModelRequested', { step: 1, steerIds: [] }, { tenantId: 'intruder' }))).toBe('orphan');
    expect(ws.turns.get(turnId)?.lastEventSeq).toBe(1);
  });

  it('numbers messages consecutively across the events of a batch', () => {
    const { ws } = run(
      started(),
      event('ModelResponded', { step: 1, text: 'calling', toolCalls: [{ id: 'c1', name: 'echo', args: {} }] }),
      event('ToolCallFinished', { step: 1, toolCallId: 'c1', name: 'echo', ok: false, error: { code: 'x', message: 'boom' }, durationMs: 1 }),
    );
    expect(ws.messages.map((m) => [m.ordinal, m.role, m.content])).toEqual([[0, 'user', 'hi'], [1, 'assistant', 'calling'], [2, 'tool', 'Error: boom']]);
    expect(ws.turns.get(turnId)?.steps).toBe(1);
  });
});

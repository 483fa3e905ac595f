import { uuidv7 } from '@steerline/contracts';
import { auditLog, type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { approve, startStack, type Stack } from '../support/stack';
import { startEngine } from '../../apps/engine/src/app';
import { loadEngineConfig } from '../../apps/engine/src/config';

type Step = Record<string, unknown>;
const sleep = (ms: number): Step => ({ tool: { name: 'sleep', args: { ms } } });
const model = (script: Step[]) => ({ provider: 'scripted', script });

describe('queued turns and follow-ups, through HTTP (docs/design.md §8)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  const newConversation = async () => (await stack.api('POST', '/conversations')).body.id as string;
  const start = (cid: string, body: Record<string, unknown>) => stack.api('POST', `/conversations/${cid}/turns`, body);
  const conversationEvents = async (cid: string) => (await stack.nats.readAll()).filter((e) => e.event.conversationId === cid);
  const turnTypes = (events: StoredEvent[], tid: string) => events.filter((e) => e.event.turnId === tid).map((e) => e.event.type);
  // The running turn's call waits for the test's approval: the turn runs, however slow the
  // machine, until the test has queued what it needs behind it (docs/design.md §9).
  const held = { tools: ['sleep'] };

  it('a queued turn starts by itself when the running one ends, in order; without whenBusy the answer is still turn_already_running', async () => {
    const cid = await newConversation();
    const first = await start(cid, { prompt: 'first', model: model([sleep(10), { text: 'one' }]), approvals: held });
    expect(first.body).toMatchObject({ status: 'running' });
    const refused = await start(cid, { prompt: 'nope', model: model([]) });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('turn_already_running');
    const second = await start(cid, { prompt: 'second', model: model([{ text: 'two' }]), whenBusy: 'queue' });
    const third = await start(cid, { prompt: 'third', model: model([{ text: 'three' }]), whenBusy: 'queue' });
    expect(second.status).toBe(202);
    expect(second.body).toMatchObject({ status: 'queued', position: 1 });
    expect(third.body).toMatchObject({ status: 'queued', position: 2 });
    await approve(stack, first.body.turnId);
    await stack.turnEnded(third.body.turnId);
    const events = await conversationEvents(cid);
    const order = events.filter((e) => e.event.type === 'TurnStarted').map((e) => e.event.turnId);
    expect(order).toEqual([first.body.turnId, second.body.turnId, third.body.turnId]);
    expect(turnTypes(events, second.body.turnId).slice(0, 2)).toEqual(['TurnQueued', 'TurnStarted']);
    // Each queued turn starts only after the one before it ended.
    const index = (type: string, tid: string) => events.findIndex((e) => e.event.type === type && e.event.turnId === tid);
    expect(index('TurnCompleted', first.body.turnId)).toBeLessThan(index('TurnStarted', second.body.turnId));
    expect(index('TurnCompleted', second.body.turnId)).toBeLessThan(index('TurnStarted', third.body.turnId));
    // The queued turn's model saw the earlier turns' context.
    const seen = stack.model.requests.find((r) => r.messages.some((m) => m.role === 'user' && m.content === 'third'))!;
    expect(seen.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['first', 'second', 'third']);
  });

  it('a queued turn cancelled never starts, the next one does, and the conversation lists it', async () => {
    const cid = await newConversation();
    const running = await start(cid, { prompt: 'busy', model: model([sleep(10), { text: 'done' }]), approvals: held });
    const cancelled = await start(cid, { prompt: 'not this', model: model([]), whenBusy: 'queue' });
    const next = await start(cid, { prompt: 'this', model: model([{ text: 'ok' }]), whenBusy: 'queue' });
    await stack.settled();
    const listed = (await stack.api('GET', `/conversations/${cid}`)).body.turns.map((t: { id: string; status: string }) => [t.id, t.status]);
    expect(listed).toEqual([
      [running.body.turnId, 'running'],
      [cancelled.body.turnId, 'queued'],
      [next.body.turnId, 'queued'],
    ]);
    expect((await stack.api('POST', `/turns/${cancelled.body.turnId}/steers`, { text: 'x' })).status).toBe(409);
    expect((await stack.api('POST', `/turns/${cancelled.body.turnId}/cancel`, { reason: 'changed my mind' })).status).toBe(202);
    await approve(stack, running.body.turnId);
    await stack.turnEnded(next.body.turnId);
    const events = await conversationEvents(cid);
    expect(turnTypes(events, cancelled.body.turnId)).toEqual(['TurnQueued', 'TurnCancelled']);
    expect(turnTypes(events, next.body.turnId).slice(0, 2)).toEqual(['TurnQueued', 'TurnStarted']);
    await stack.settled();
    expect((await stack.api('GET', `/turns/${cancelled.body.turnId}`)).body).toMatchObject({ status: 'cancelled', cancelReason: 'changed my mind' });
  });

  it('a cap of 10 queued turns: the 11th is turn_queue_full', async () => {
    const cid = await newConversation();
    const busy = await start(cid, { prompt: 'busy', model: model([sleep(10)]), approvals: held });
    const answers = [];
    for (let i = 0; i < 11; i++) answers.push(await start(cid, { prompt: `q${i}`, model: model([]), whenBusy: 'queue' }));
    await approve(stack, busy.body.turnId);
    expect(answers.slice(0, 10).map((a) => a.body.position)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(answers[10].status).toBe(429);
    expect(answers[10].body.error.code).toBe('turn_queue_full');
    await stack.turnEnded(answers[9].body.turnId, 30_000);
  });

  it('a steer sent with onTurnEnd next_turn while the model writes its final answer becomes the prompt of the next turn, which starts by itself', async () => {
    const cid = await newConversation();
    const { turnId } = (await start(cid, { prompt: 'write it', model: model([{ text: 'final answer', delayMs: 2500 }]), limits: { maxSteps: 7 } })).body;
    // Both sent while the answer is written (2.5 s: room for a slow round trip); each answer waits for its settlement.
    const [moved, movedToo] = await Promise.all([
      stack.api('POST', `/turns/${turnId}/steers`, { text: 'now add tests', onTurnEnd: 'next_turn', steerId: uuidv7() }, { Prefer: 'wait=30' }),
      stack.api('POST', `/turns/${turnId}/steers`, { text: 'and docs', onTurnEnd: 'next_turn', steerId: uuidv7() }, { Prefer: 'wait=30' }),
    ]);
    expect(moved.status).toBe(409);
    expect(moved.body.error).toMatchObject({ code: 'steer_dropped', reason: 'moved_to_next_turn', text: 'now add tests' });
    const nextTurnId = moved.body.error.nextTurnId as string;
    expect(movedToo.body.error.nextTurnId).toBe(nextTurnId);
    const events = await stack.turnEnded(nextTurnId);
    expect(events.slice(0, 2).map((e) => e.event.type)).toEqual(['TurnQueued', 'TurnStarted']);
    // Sent at once, so either may have the first position: the prompt follows the positions.
    const inOrder = [moved, movedToo].map((r) => r.body.error).sort((a, b) => a.position - b.position).map((e) => e.text);
    expect(events[1].event.data).toMatchObject({ prompt: inOrder.join('\n\n'), limits: { maxSteps: 7 } });
    expect(events[0].event.data).toMatchObject({ fromTurnId: turnId });
    await stack.settled();
    const receipt = await stack.api('GET', `/turns/${turnId}/steers/${moved.body.error.steerId}`);
    expect(receipt.body.error).toMatchObject({ code: 'steer_dropped', reason: 'moved_to_next_turn', nextTurnId });
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);
  });

  it('cancel of a queued turn racing its start: exactly one wins, and the log stays valid', async () => {
    const cid = await newConversation();
    const busy = (await start(cid, { prompt: 'busy', model: model([sleep(300)]) })).body.turnId as string;
    const queued = (await start(cid, { prompt: 'racing', model: model([sleep(300)]), whenBusy: 'queue' })).body.turnId as string;
    // Cancels sent until one is accepted, from before the running turn ends to after the queued one started.
    await eventually(async () => ((await stack.api('POST', `/turns/${queued}/cancel`, { reason: 'race' })).status === 202 ? true : undefined), 10_000, 'a cancel');
    const events = await stack.turnEnded(queued);
    const types = events.map((e) => e.event.type);
    expect(types.filter((t) => t === 'TurnCancelled')).toHaveLength(1);
    expect(types[0]).toBe('TurnQueued');
    await stack.turnEnded(busy);
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);
  });

  it('with two engines, starts queued through either one reach the owner: one writer, every turn in queue order, never two running', async () => {
    const second = await startEngine({ ...loadEngineConfig(stack.env), leaseMs: 5000 }, { logger: false });
    try {
      const cid = await newConversation();
      const first = (await start(cid, { prompt: 'first', model: model([sleep(10)]), approvals: held })).body.turnId as string;
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => start(cid, { prompt: `q${i}`, model: model([{ text: `a${i}` }]), whenBusy: 'queue' })));
      await approve(stack, first);
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(202));
      expect(answers.map((a) => a.body.position).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      const byPosition = answers.map((a) => a.body).sort((a, b) => a.position - b.position).map((b) => b.turnId as string);
      await stack.turnEnded(byPosition.at(-1)!, 20_000);
      const started = (await conversationEvents(cid)).filter((e) => e.event.type === 'TurnStarted').map((e) => e.event.turnId);
      expect(started).toEqual([first, ...byPosition]);
      const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
      expect(report.violations).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it('an engine that shuts down hands over its running turn and the turns queued behind it: the adopter runs the one, then starts the others in order', async () => {
    const owner = await startEngine({ ...loadEngineConfig(stack.env), leaseMs: 5000 }, { logger: false });
    const cid = await newConversation();
    // Started on that engine itself, so it owns the conversation; the queued starts reach it from either engine.
    // Its 3 s tool keeps it running until the engine shuts down, two round trips later.
    const long = { provider: 'scripted' as const, name: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 3000 } } }, { text: 'long done' }] };
    const { turnId } = await owner.service.turns!.start({ tenantId: 'default', conversationId: cid, prompt: 'long', model: long });
    const queued = await start(cid, { prompt: 'later', model: model([{ text: 'later done' }]), whenBusy: 'queue' });
    const last = await start(cid, { prompt: 'last', model: model([{ text: 'last done' }]), whenBusy: 'queue' });
    expect([queued.body, last.body]).toMatchObject([{ status: 'queued', position: 1 }, { status: 'queued', position: 2 }]);
    await owner.close();
    // Nothing was cancelled on the way out: the stack's engine adopts the turn (TurnResumed) with its queue.
    await stack.turnEnded(last.body.turnId, 30_000);
    const events = await conversationEvents(cid);
    expect(turnTypes(events, turnId)).toContain('TurnResumed');
    expect(turnTypes(events, turnId).at(-1)).toBe('TurnCompleted');
    for (const id of [queued.body.turnId, last.body.turnId]) expect(turnTypes(events, id)).toEqual(['TurnQueued', 'TurnStarted', 'ModelRequested', 'ModelResponded', 'TurnCompleted']);
    const started = events.filter((e) => e.event.type === 'TurnStarted').map((e) => e.event.turnId);
    expect(started).toEqual([turnId, queued.body.turnId, last.body.turnId]);
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { tenantId: 'default', conversationId: cid, requireSettled: true });
    expect(report.violations).toEqual([]);
  }, 45_000);
});

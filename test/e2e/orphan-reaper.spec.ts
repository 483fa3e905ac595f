import { Kvm } from '@nats-io/kv';
import { DEFAULT_LIMITS, uuidv7, type TurnEvent } from '@steerline/contracts';
import { auditLog, lastMessage, readConversation, type StoredEvent } from '@steerline/runtime';
import { EventLog } from '../../apps/engine/src/log/event-log';
import { TurnOwnership } from '../../apps/engine/src/ownership/turn-ownership';
import { execute } from '../../apps/engine/src/turn/turn.decider';
import type { TurnCommand } from '../../apps/engine/src/turn/turn.commands';
import { initialState, type TurnState } from '../../apps/engine/src/turn/turn.state';
import { eventually } from '../support/env';
import { approvalRequested, startStack, type Stack } from '../support/stack';

const typesOf = (events: StoredEvent[]) => events.map((e) => e.event.type);
/** A stored message's time in nanoseconds (RFC 3339 with up to nine fraction digits). */
const nanos = (timestamp: string): bigint => {
  const [whole, fraction = '0Z'] = timestamp.split('.');
  return BigInt(Date.parse(`${whole}Z`)) * 1_000_000n + BigInt(fraction.replace('Z', '').padEnd(9, '0'));
};

describe('an adopted turn keeps its approvals, steer deadlines and queued turns (docs/design.md §2, §8–§10)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ leaseMs: 1000 });
  });
  afterAll(() => stack.close());

  it('the reaper adopts a handed-over turn: its pending call stays pending until the re-armed timeout, its steer expires, and the turn queued behind it starts after it', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const script = [{ tool: { name: 'sleep', args: { ms: 50 } } }, { text: 'done' }];
    // 5 s to decide: the steer and the queued turn go in before the first engine's own timer could deny the call, however busy the machine.
    const first = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'first', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'], timeoutMs: 5000 } });
    expect(first.status).toBe(202);
    const tid = first.body.turnId as string;
    await eventually(async () => (typesOf(await stack.turnEvents(tid)).includes('ToolApprovalRequested') ? true : undefined), 10_000, 'the approval request');
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'only if quick', ttlMs: 1500 });
    expect(steer.status).toBe(202);
    const queued = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'then this', model: { provider: 'scripted', script: [{ text: 'second done' }] }, whenBusy: 'queue' });
    expect(queued.body).toMatchObject({ status: 'queued', position: 1 });

    // The engine lets the running turn go without settling it, as a stopping engine does; its reaper adopts it.
    await stack.engine.service.turns!.turn(tid)!.handOver();
    const ended = await stack.turnEnded(tid);
    const types = typesOf(ended);
    expect(types).toContain('TurnResumed');
    // Nobody decided: the timeout the adopter re-armed denied the call; the steer's deadline dropped it.
    const resumedAt = types.indexOf('TurnResumed');
    const decided = ended.find((e) => e.event.type === 'ToolApprovalDecided')!;
    expect(types.indexOf('ToolApprovalDecided')).toBeGreaterThan(resumedAt);
    expect(decided.event.data).toMatchObject({ toolCallId: 'call_1_0', decision: 'denied', by: 'timeout' });
    const dropped = ended.find((e) => e.event.type === 'SteerDropped')!;
    expect(dropped.event.data).toMatchObject({ reason: 'expired', text: 'only if quick' });
    expect(types.at(-1)).toBe('TurnCompleted');

    // The queued turn survived the move and starts once the adopted turn ended.
    const second = await stack.turnEnded(queued.body.turnId as string);
    expect(typesOf(second)).toEqual(['TurnQueued', 'TurnStarted', 'ModelRequested', 'ModelResponded', 'TurnCompleted']);
    const audit = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { tenantId: ended[0].event.tenantId, conversationId: cid, requireSettled: true });
    expect(audit.violations).toEqual([]);
  }, 40_000);

  /** Runs commands through the engine's own decider, as an engine would have: the events it would have appended. */
  function decide(state: TurnState, ...commands: TurnCommand[]): { state: TurnState; events: TurnEvent[] } {
    const events: TurnEvent[] = [];
    for (const command of commands) {
      const result = execute(state, command, () => ({ id: uuidv7(), at: new Date().toISOString() }));
      state = result.state;
      events.push(...result.events);
    }
    return { state, events };
  }

  it('an engine killed between a turn’s end and the next queued turn’s start leaves a claim the reaper finds: the queued turn, then the follow-up of the ended turn’s next_turn steer, start and complete', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const tenantId = (await readConversation(stack.nats.jsm, stack.nats.s.stream, stack.nats.s.conversationEvents('default', cid))).events[0].event.tenantId;
    const subject = stack.nats.s.conversationEvents(tenantId, cid);
    const gone = `engine-gone-${uuidv7()}`;
    const [first, second, followUp] = [uuidv7(), uuidv7(), uuidv7()];
    const model = { provider: 'scripted' as const, name: 'scripted', script: [{ text: 'done here' }] };
    const blank = (turnId: string): TurnState => ({ ...initialState(), turnId, tenantId, conversationId: cid });
    // What the lost engine appended, in the order it would have: the first turn starts, a second is queued
    // behind it, a steer asks to move to the next turn, and the first turn ends at a text-only answer.
    const started = decide(blank(first), { type: 'StartTurn', turnId: first, tenantId, conversationId: cid, prompt: 'first', model, limits: DEFAULT_LIMITS, engineId: gone });
    const queued = decide(blank(second), { type: 'QueueTurn', prompt: 'second', model: { ...model, script: [{ text: 'second done' }] }, limits: DEFAULT_LIMITS, position: 1 });
    const ended = decide(
      started.state,
      { type: 'SubmitSteer', steerId: uuidv7(), text: 'then sum it up', onTurnEnd: 'next_turn' },
      { type: 'RecordModelAnswer', step: 1, text: 'first done', toolCalls: [], nextTurnId: followUp },
    );
    expect(ended.state.status).toBe('completed');
    const log = new EventLog(stack.nats.nc);
    let lastSeq = (await lastMessage(stack.nats.jsm, stack.nats.s.stream, subject))!.seq;
    for (const batch of [started.events, queued.events, ended.events]) lastSeq = await log.append(subject, batch, lastSeq);
    // Its claim on the ended turn is still there (an ended turn keeps it until the next one has started); the engine is gone.
    const lost = await TurnOwnership.open(stack.nats.nc, stack.nats.s, gone, 1000);
    await lost.claim({ turnId: first, tenantId, conversationId: cid });
    await lost.close(true);

    const secondEvents = await stack.turnEnded(second, 30_000);
    expect(secondEvents.map((e) => e.event.type)).toEqual(['TurnQueued', 'TurnStarted', 'ModelRequested', 'ModelResponded', 'TurnCompleted']);
    expect(secondEvents.at(-2)!.event.data).toMatchObject({ text: 'second done' });
    const followUpEvents = await stack.turnEnded(followUp, 30_000);
    expect(followUpEvents.map((e) => e.event.type)).toEqual(['TurnQueued', 'TurnStarted', 'ModelRequested', 'ModelResponded', 'TurnCompleted']);
    expect(followUpEvents[0].event.data).toMatchObject({ prompt: 'then sum it up', fromTurnId: first });
    // In order: the follow-up goes at the end of the queue.
    expect(followUpEvents[1].streamSeq).toBeGreaterThan(secondEvents.at(-1)!.streamSeq);
    const turns = await new Kvm(stack.nats.nc).open(stack.nats.s.turnsBucket);
    await eventually(async () => ((await turns.get(`${gone}.${first}`))?.operation !== 'PUT' ? true : undefined), 10_000, 'the lost engine’s claim released');
    const audit = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { tenantId, conversationId: cid, requireSettled: true });
    expect(audit.violations).toEqual([]);
  }, 60_000);

  it('a turn that ends with another queued behind it lets go of its claim only once the next turn has started', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const first = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'first', model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 50 } } }, { text: 'first done' }] }, approvals: { tools: ['sleep'] } });
    const tid = first.body.turnId as string;
    // The first turn waits for an approval: the queued turn is surely queued behind it.
    await approvalRequested(stack, tid, 'call_1_0', 10_000);
    const queued = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'then this', model: { provider: 'scripted', script: [{ text: 'second done' }] }, whenBusy: 'queue' });
    const next = queued.body.turnId as string;
    expect((await stack.api('POST', `/turns/${tid}/approvals/call_1_0`, { decision: 'approve' })).status).toBeLessThan(300);
    await stack.turnEnded(next);
    // The server's clock orders the two streams: the claim's deletion came after the next turn's start was stored.
    const bucket = stack.nats.s.turnsBucket;
    const turns = await new Kvm(stack.nats.nc).open(bucket);
    const released = await eventually(async () => {
      const info = await stack.nats.jsm.streams.info(`KV_${bucket}`, { subjects_filter: `$KV.${bucket}.*.${tid}` });
      const [subject] = Object.keys(info.state.subjects ?? {});
      if (!subject || (await turns.get(subject.slice(`$KV.${bucket}.`.length)))?.operation === 'PUT') return undefined;
      return stack.nats.jsm.streams.getMessage(`KV_${bucket}`, { last_by_subj: subject });
    }, 10_000, 'the first turn’s claim released');
    const nextStarted = (await stack.turnEvents(next)).find((e) => e.event.type === 'TurnStarted')!;
    const startedMsg = await stack.nats.jsm.streams.getMessage(stack.nats.s.stream, { seq: nextStarted.streamSeq });
    expect(nanos(released!.timestamp)).toBeGreaterThan(nanos(startedMsg!.timestamp));
    expect((await stack.turnEnded(next)).at(-1)!.event.type).toBe('TurnCompleted');
  }, 40_000);
});

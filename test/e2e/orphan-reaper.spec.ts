import { auditLog, type StoredEvent } from '@steerline/contracts';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

const typesOf = (events: StoredEvent[]) => events.map((e) => e.event.type);

describe('an adopted turn keeps its approvals, steer deadlines and queued turns (docs/design.md §8.2–§8.4)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ leaseMs: 1000 });
  });
  afterAll(() => stack.close());

  it('the reaper adopts a handed-over turn: its pending call stays pending until the re-armed timeout, its steer expires, and the turn queued behind it starts after it', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const script = [{ tool: { name: 'sleep', args: { ms: 50 } } }, { text: 'done' }];
    const first = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'first', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'], timeoutMs: 2500 } });
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
});

import { auditLog, type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { OwnNatsServer } from '../support/processes';
import { approvalRequested, approve, startStack, steerWhileHeld, type Stack } from '../support/stack';

const sleep = (ms: number) => ({ tool: { name: 'sleep', args: { ms } } });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a NATS restart in the middle of a turn', () => {
  let nats: OwnNatsServer;
  let stack: Stack;
  beforeAll(async () => {
    nats = await OwnNatsServer.start();
    stack = await startStack({ env: { NATS_URL: nats.url } });
  });
  afterAll(async () => {
    await stack?.close();
    await nats?.destroy();
  });

  it('services reconnect, the turn finishes, receipts arrive, and no event is lost or doubled', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id;
    // Each sleep waits for the test's approval, so the test, not the machine's speed, decides when each step runs.
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'ride it out', model: { provider: 'scripted', script: [sleep(1200), sleep(100), { text: 'made it' }] }, approvals: { tools: ['sleep'] } })).body.turnId;
    await approvalRequested(stack, tid, 'call_1_0', 30_000);
    const before = await stack.api('POST', `/turns/${tid}/steers`, { text: 'sent before the outage' });
    expect(before.status).toBe(202);
    await approve(stack, tid);

    // Down across step 1's boundary (its 1.2 s tool has just started): the delivery's append is retried until NATS is back.
    await nats.stop('SIGKILL');
    await pause(1800);
    await nats.restart();

    // A settlement published while the gateway was reconnecting never reaches its subscription; the
    // wait then learns it from the read model (asked every 2 s); step 2 waits for its approval meanwhile.
    const receipt = await eventually(async () => {
      const r = await stack.api('GET', `/turns/${tid}/steers/${before.body.steerId}`, undefined, { Prefer: 'wait=5' });
      return r.status === 200 ? r : undefined;
    }, 20_000, 'the steer sent before the outage to be delivered');
    expect(receipt.body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results' });
    await approvalRequested(stack, tid, 'call_2_0', 30_000);
    const after = await steerWhileHeld(stack, tid, 'sent after the outage', 'call_2_0');
    expect({ status: after.status, body: after.body }).toMatchObject({ status: 200, body: { status: 'delivered', step: 2 } });

    const log: StoredEvent[] = await eventually(async () => {
      const all = (await stack.nats.readAll()).filter((e) => e.event.turnId === tid);
      return all.at(-1)?.event.type === 'TurnCompleted' ? all : undefined;
    }, 20_000, 'the turn to complete');
    const ids = log.map((e) => e.event.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(log.at(-1)!.event.data).toMatchObject({ text: 'Acknowledged: sent after the outage\nmade it' });
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);

    // The read side caught up with exactly the log.
    await stack.settled();
    const conversation = await stack.api('GET', `/conversations/${cid}`);
    expect(conversation.body.steers.map((s: { status: string }) => s.status)).toEqual(['delivered', 'delivered']);
    expect(conversation.body.messages.filter((m: { role: string }) => m.role === 'assistant')).toHaveLength(3);
  });
});

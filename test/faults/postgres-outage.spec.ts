import { eventually, PG_URL } from '../support/env';
import { CuttableProxy } from '../support/processes';
import { startStack, steerWhileHeld, type Stack } from '../support/stack';

describe('a PostgreSQL outage', () => {
  let proxy: CuttableProxy;
  let stack: Stack;
  beforeAll(async () => {
    // In front of the test run's PostgreSQL (TEST_PG_URL: 5432, or the embedded one).
    const port = new URL(PG_URL).port || '5432';
    proxy = await CuttableProxy.start(Number(port));
    stack = await startStack({ databaseUrl: (url) => url.replace(`:${port}/`, `:${proxy.port}/`) });
  });
  afterAll(async () => {
    await stack?.close();
    await proxy?.close();
  });

  it('queries answer 503 unavailable while turns go on; the projector catches up when it returns, nothing lost or doubled', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id;
    await stack.settled();
    proxy.cut();

    const down = await stack.api('GET', `/conversations/${cid}`);
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('unavailable');

    // The write side does not need the database: a whole turn runs during the outage.
    // Its call waits for approval until the steer is queued, so the steer lands in step 1 however slow the machine.
    const script = [{ tool: { name: 'sleep', args: { ms: 10 } } }];
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'during the outage', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'] } })).body.turnId;
    const steer = await steerWhileHeld(stack, tid, 'still accepted');
    expect(steer.status).toBe(200);
    // The whole turn ends while the database is still away.
    await stack.turnHas(tid, 'TurnCompleted');

    proxy.restore();
    await eventually(async () => ((await stack.api('GET', `/turns/${tid}`)).body?.status === 'completed' ? true : undefined), 30_000, 'the projector to catch up');
    await stack.settled();
    const view = await stack.api('GET', `/conversations/${cid}`);
    expect(view.status).toBe(200);
    expect(view.body.steers).toEqual([expect.objectContaining({ text: 'still accepted', status: 'delivered' })]);
    const log = (await stack.nats.readAll()).filter((e) => e.event.conversationId === cid);
    const messageEvents = log.filter((e) => ['TurnStarted', 'ModelResponded', 'ToolCallFinished', 'SteeringDelivered'].includes(e.event.type));
    expect(view.body.messages).toHaveLength(messageEvents.length);
  });
});

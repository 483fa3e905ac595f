import { readSse } from '@steerline/client';
import { startGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { jsonLogger } from '../../apps/gateway/src/logger';
import { NATS_URL } from '../support/env';
import { approve, startStack, type Stack } from '../support/stack';

describe('a gateway shutting down answers what it holds and drops nothing', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it('answers a steer waiting on Prefer: wait with its queued receipt, ends event streams, and the steer is still delivered', async () => {
    const gateway = await startGateway(loadGatewayConfig({ NATS_URL, STEERLINE_PREFIX: stack.prefix, PORT: '0' }), { logger: jsonLogger(['error']) });
    const cid = (await stack.api('POST', '/conversations')).body.id;
    // Step 1's call waits for approval: the steer stays queued through the shutdown, however long it takes.
    const script = [{ tool: { name: 'sleep', args: { ms: 10 } } }, { text: 'ok' }];
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'] } })).body.turnId;

    const events = await fetch(`${gateway.url}/v1/conversations/${cid}/events`);
    const streamed = (async () => {
      const types: string[] = [];
      for await (const m of readSse(events.body!)) types.push(m.event);
      return types;
    })();
    const waiting = fetch(`${gateway.url}/v1/turns/${tid}/steers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', prefer: 'wait=30' },
      body: JSON.stringify({ text: 'hold on' }),
    });
    // The gateway holds the request once the steer is in the log, waiting for its settlement.
    await stack.turnHas(tid, 'SteerQueued');

    const started = Date.now();
    await gateway.close();
    const res = await waiting;
    expect(res.status).toBe(202);
    const receipt = (await res.json()) as { steerId: string };
    expect(receipt).toMatchObject({ status: 'queued', text: 'hold on', position: 1 });
    // The stream ended cleanly (the iterator finished) after what had happened so far.
    expect(await streamed).toEqual(expect.arrayContaining(['ConversationCreated', 'TurnStarted']));
    // Well short of the 30 s the request asked to wait: the shutdown answered it rather than waiting it out.
    expect(Date.now() - started).toBeLessThan(10_000);
    await expect(fetch(`${gateway.url}/healthz`)).rejects.toThrow();

    // Another gateway tells the rest of the story: the steer was accepted, and is delivered.
    await approve(stack, tid);
    const settled = await stack.api('GET', `/turns/${tid}/steers/${receipt.steerId}`, undefined, { prefer: 'wait=30' });
    expect(settled.body).toMatchObject({ status: 'delivered', step: 1 });
  });
});

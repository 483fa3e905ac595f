import { ServiceProcess, freePort } from '../support/processes';
import { startStack, type Stack } from '../support/stack';

describe('a gateway restart while clients wait for receipts', () => {
  let stack: Stack;
  const gateways: ServiceProcess[] = [];
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill()));
    await stack.close();
  });

  async function gateway(port: number): Promise<string> {
    const g = new ServiceProcess('gateway', { ...stack.env, PORT: String(port) });
    gateways.push(g);
    await g.ready();
    return `http://127.0.0.1:${port}/v1`;
  }

  it('a client whose waiting request died with the gateway recovers its receipt by id from the new one', async () => {
    const port = await freePort();
    const api = await gateway(port);
    const cid = ((await (await fetch(`${api}/conversations`, { method: 'POST' })).json()) as { id: string }).id;
    const turn = await fetch(`${api}/conversations/${cid}/turns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // The call waits for approval, given only after the restart: the steer is still queued when the gateway dies.
      body: JSON.stringify({ prompt: 'x', model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 10 } } }] }, approvals: { tools: ['sleep'] } }),
    });
    const { turnId } = (await turn.json()) as { turnId: string };
    const steerId = '0190f000-0000-7000-8000-00000000beef';
    const waiting = fetch(`${api}/turns/${turnId}/steers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', Prefer: 'wait=20' },
      body: JSON.stringify({ text: 'survive the restart', steerId }),
    }).then(
      (r) => r.status,
      () => 'connection lost' as const,
    );
    // The gateway holds the request once the steer is in the log, waiting for its settlement.
    await stack.turnHas(turnId, 'SteerQueued');
    await gateways[0].kill();
    expect(await waiting).toBe('connection lost');

    const again = await gateway(port);
    const approved = await fetch(`${again}/turns/${turnId}/approvals/call_1_0`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }) });
    expect(approved.status).toBe(200);
    const receipt = await fetch(`${again}/turns/${turnId}/steers/${steerId}`, { headers: { Prefer: 'wait=30' } });
    expect(receipt.status).toBe(200);
    expect(await receipt.json()).toMatchObject({ steerId, status: 'delivered', step: 1, text: 'survive the restart' });
  });
});

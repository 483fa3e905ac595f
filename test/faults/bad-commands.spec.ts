import { BODY_MAX_BYTES, type Reply } from '@steerline/contracts';
import { decodeJson } from '@steerline/runtime';
import { approvalRequested, startStack, steerWhileHeld, type Stack } from '../support/stack';

describe('malformed and oversized messages on command subjects', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  async function raw(subject: string, payload: Uint8Array | string): Promise<Reply<unknown>> {
    const msg = await stack.nats.nc.request(subject, payload, { timeout: 20_000 });
    return decodeJson(msg.data) as Reply<unknown>;
  }

  it('each gets a typed error reply, nothing is appended, and the engine keeps running turns', async () => {
    const s = stack.nats.s;
    const cid = (await stack.api('POST', '/conversations')).body.id;
    // Its call waits for the test's approval: the turn is still running, and appends nothing, while the bad commands are sent.
    const script = [{ tool: { name: 'sleep', args: { ms: 10 } } }];
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'x', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'] } })).body.turnId;
    await approvalRequested(stack, tid);
    const eventsBefore = (await stack.nats.readAll()).length;

    const cases: [string, Uint8Array | string, string][] = [
      [s.startTurn, '{not json', 'invalid_request'],
      [s.startTurn, JSON.stringify({ tenantId: 'default', conversationId: 'nope', prompt: 'x' }), 'invalid_request'],
      [s.startTurn, JSON.stringify([1, 2, 3]), 'invalid_request'],
      [s.createConversation, JSON.stringify({ tenantId: 'bad tenant!' }), 'invalid_request'],
      [s.startTurn, new Uint8Array(BODY_MAX_BYTES + 1).fill(32), 'payload_too_large'],
      [s.turnSteer(tid), '\u0000\u0001', 'invalid_request'],
      [s.turnSteer(tid), JSON.stringify({ tenantId: 'default', text: 42 }), 'invalid_request'],
      [s.turnSteer(tid), JSON.stringify({ tenantId: 'default', text: '   ' }), 'invalid_request'],
      [s.turnSteer(tid), JSON.stringify({ tenantId: 'default', text: 'ok', steerId: 'not-a-uuid' }), 'invalid_request'],
      [s.turnSteer(tid), JSON.stringify({ tenantId: 'other', text: 'not yours' }), 'not_found'],
      [s.withdraw(tid), JSON.stringify({ tenantId: 'default' }), 'invalid_request'],
      [s.cancel(tid), JSON.stringify({ tenantId: 'default', reason: 'x'.repeat(10_000) }), 'invalid_request'],
      [`${s.prefix}.cmd.turn.${tid}.explode`, '{}', 'invalid_request'],
    ];
    for (const [subject, payload, code] of cases) {
      const reply = await raw(subject, payload);
      expect({ subject, reply }).toMatchObject({ subject, reply: { ok: false, error: { code } } });
    }
    expect((await stack.nats.readAll()).length).toBe(eventsBefore);

    const steer = await steerWhileHeld(stack, tid, 'still listening?');
    expect(steer.status).toBe(200);
    expect(steer.body.status).toBe('delivered');
  });
});

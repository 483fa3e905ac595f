import { uuidv7, type Receipt, type SteerlineEvent } from '@steerline/contracts';
import { answer, delivered, dropped, json, publishEvent, startHarness, type Harness } from '../../../../test/support/gateway-harness';

const KEY = 'acme-key';

describe('steer receipts, with an engine answering a turn', () => {
  const conversationId = uuidv7();
  const turnId = uuidv7();
  let h: Harness;
  let seen: Array<Record<string, unknown>> = [];
  // What the engine double publishes for a steer before replying, if anything.
  let settle: (steerId: string, text: string) => SteerlineEvent | undefined = () => undefined;
  const steer = (body: unknown, prefer?: string) =>
    h.postJson(`/v1/turns/${turnId}/steers`, body, { key: KEY, headers: prefer ? { prefer } : {} });

  beforeAll(async () => {
    h = await startHarness({ STEERLINE_API_KEYS: `${KEY}:acme` });
    await answer(h.nc, h.s.turnSteer(turnId), (body) => {
      const b = body as { tenantId: string; text: string; steerId: string };
      seen.push(b);
      const event = settle(b.steerId, b.text);
      // Published before the reply: the gateway must not miss a settlement that wins the race.
      if (event) publishEvent(h.nc, h.s, event);
      return { steerId: b.steerId, turnId, status: 'queued', position: seen.length, text: b.text } satisfies Receipt;
    });
  });
  afterAll(() => h?.close());
  beforeEach(() => {
    seen = [];
    settle = () => undefined;
  });

  it('sends the tenant of the API key and a gateway-chosen steerId, and answers 202 queued', async () => {
    const res = await steer({ text: '  go left  ' });
    expect(res.status).toBe(202);
    const receipt = await json(res);
    expect(seen).toEqual([{ tenantId: 'acme', text: 'go left', steerId: receipt.steerId }]);
    expect(receipt).toMatchObject({ turnId, status: 'queued', text: 'go left' });
    expect(res.headers.get('preference-applied')).toBeNull();
  });

  it('answers 200 with the delivered receipt when the steer is delivered within Prefer: wait', async () => {
    settle = (steerId, text) => delivered({ conversationId, turnId, steerId, text });
    const res = await steer({ text: 'go left' }, 'wait=5');
    expect(res.status).toBe(200);
    expect(res.headers.get('preference-applied')).toBe('wait=5');
    expect(await json(res)).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2, text: 'go left' });
  });

  it('answers 409 steer_dropped with the text when the steer is dropped within the wait', async () => {
    settle = (steerId, text) => dropped({ conversationId, turnId, steerId, text });
    const res = await steer({ text: 'go right' }, 'wait=5');
    expect(res.status).toBe(409);
    expect((await json(res)).error).toMatchObject({ code: 'steer_dropped', reason: 'turn_cancelled', text: 'go right', turnId });
  });

  it('answers 202 queued once the wait runs out without a settlement', async () => {
    const started = Date.now();
    const res = await steer({ text: 'slowly' }, 'wait=1');
    expect(res.status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(res.headers.get('preference-applied')).toBe('wait=1');
  });

  it("ignores another tenant's settlement of a steer with the same id", async () => {
    settle = (steerId, text) => delivered({ tenantId: 'globex', conversationId, turnId, steerId, text });
    const res = await steer({ text: 'mine', steerId: uuidv7() }, 'wait=1');
    expect(res.status).toBe(202);
  });

  it("steers a conversation through its own subject, passing the expected turn and the client's steerId", async () => {
    const steerId = uuidv7();
    const expectedTurnId = uuidv7();
    const conv = await answer(h.nc, h.s.conversationSteer(conversationId), (body) => {
      seen.push(body as Record<string, unknown>);
      return { steerId, turnId: expectedTurnId, status: 'queued', position: 1, text: 'left' } satisfies Receipt;
    });
    try {
      const body = { text: 'left', steerId: steerId.toUpperCase(), expectedTurnId };
      const res = await h.postJson(`/v1/conversations/${conversationId}/steers`, body, { key: KEY });
      expect(res.status).toBe(202);
      expect(seen).toEqual([{ tenantId: 'acme', text: 'left', steerId, expectedTurnId }]);
    } finally {
      conv.unsubscribe();
    }
  });

  it('answers a read of a queued steer with its settlement once it arrives within the wait', async () => {
    const steerId = uuidv7();
    let reads = 0;
    const query = await answer(h.nc, h.s.querySteer, () => {
      // The gateway listens before it reads: the settlement comes after the read model said queued, as it would for real.
      if (++reads === 1) setTimeout(() => publishEvent(h.nc, h.s, delivered({ conversationId, turnId, steerId, text: 'later' })), 200);
      return { steerId, turnId, status: 'queued', position: 1, text: 'later' } satisfies Receipt;
    });
    try {
      const res = await h.call(`/v1/turns/${turnId}/steers/${steerId}`, { key: KEY, headers: { prefer: 'wait=5' } });
      expect(res.status).toBe(200);
      expect(await json(res)).toMatchObject({ steerId, status: 'delivered' });
    } finally {
      query.unsubscribe();
    }
  });
});

describe('steers at shutdown', () => {
  it('answers a steer still waiting on Prefer: wait with its queued receipt instead of cutting it off', async () => {
    const turnId = uuidv7();
    const h = await startHarness();
    let reached!: () => void;
    const engineAnswered = new Promise<void>((r) => (reached = r));
    await answer(h.nc, h.s.turnSteer(turnId), (body) => {
      reached();
      return { ...(body as object), turnId, status: 'queued', position: 1 };
    });
    const answered = h.postJson(`/v1/turns/${turnId}/steers`, { text: 'hold on' }, { headers: { prefer: 'wait=30' } });
    // The engine has the steer: from here the gateway only waits for its settlement.
    await engineAnswered;
    const closing = Date.now();
    await h.close();
    const res = await answered;
    expect(res.status).toBe(202);
    expect(await json(res)).toMatchObject({ status: 'queued', text: 'hold on' });
    expect(Date.now() - closing).toBeLessThan(10_000);
  });
});

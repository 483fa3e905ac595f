import type { NatsConnection } from '@nats-io/transport-node';
import { subjects, uuidv7, type SteerlineEvent, type TurnView } from '@steerline/contracts';
import { connectNats } from '@steerline/runtime';
import { ConversationTails } from '../events/conversation-tails';
import { EventLogClient } from '../nats/event-log.client';
import { ReadModelsClient } from '../nats/read-models.client';
import { eventually } from '../../../../test/support/env';
import { answer, delivered as deliveredEvent, NATS_URL, publishEvent } from '../testing/harness';
import { ReceiptWaiter } from './receipt-waiter';
import { SettlementInterest } from './settlement-interest';

// No stream under this prefix: the waiter listens on the event subjects, where the harness publishes.
describe('ReceiptWaiter', () => {
  const s = subjects(`rwtest_${uuidv7().slice(-12)}`);
  const conversationId = uuidv7();
  const turnId = uuidv7();
  let nc: NatsConnection;
  let tails: ConversationTails;
  let interest: SettlementInterest;
  let waiter: ReceiptWaiter;

  beforeAll(async () => {
    nc = await connectNats(NATS_URL, 'receipt-waiter-spec');
    const eventLog = new EventLogClient(nc, s);
    tails = new ConversationTails(nc, s, eventLog);
    interest = new SettlementInterest(nc, s, tails, new ReadModelsClient(nc, s), eventLog);
    waiter = new ReceiptWaiter(interest);
  });
  afterAll(async () => {
    waiter.onModuleDestroy();
    interest.onModuleDestroy();
    tails.onModuleDestroy();
    await nc.drain();
  });

  const delivered = (steerId: string, envelope: { turnId?: string; tenantId?: string; conversationId?: string; text?: string } = {}) =>
    deliveredEvent({ conversationId, turnId, steerId, ...envelope });

  const publish = async (event: SteerlineEvent, steerIdHeader?: string) => {
    publishEvent(nc, s, event, steerIdHeader);
    await nc.flush();
  };
  const inConversation = (steerId: string) => waiter.register({ tenantId: 'acme', steerId, conversationId });

  it('keeps a settlement that arrives between register and wait', async () => {
    const steerId = uuidv7();
    const pending = await inConversation(steerId);
    await publish(delivered(steerId));
    // A wait of 0 ms answers only from what was kept: asked until the event has been routed, however slow the machine.
    const kept = await eventually(() => pending.wait(turnId, 0), 10_000, 'the settlement to be kept');
    expect(kept).toMatchObject({ steerId, status: 'delivered', turnId });
    pending.cancel();
  });

  it('gives up with no receipt when the time runs out', async () => {
    const pending = await inConversation(uuidv7());
    await expect(pending.wait(turnId, 50)).resolves.toBeUndefined();
    pending.cancel();
  });

  it('stops waiting as soon as the client goes away', async () => {
    const pending = await inConversation(uuidv7());
    const gone = new AbortController();
    const started = Date.now();
    setTimeout(() => gone.abort(), 20);
    await expect(pending.wait(turnId, 60_000, gone.signal)).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(10_000);
    pending.cancel();
  });

  it('ignores a settlement of another turn or another tenant, and an event whose header misnames the steer', async () => {
    const steerId = uuidv7();
    const pending = await inConversation(steerId);
    const waiting = pending.wait(turnId, 10_000);
    await publish(delivered(steerId, { turnId: uuidv7(), text: 'other turn' }));
    await publish(delivered(steerId, { tenantId: 'globex', text: 'other tenant' }));
    await publish(delivered(uuidv7(), { text: 'misnamed' }), steerId);
    // Sent last on the same connection: the wait ends with it only if it ignored the three before it.
    await publish(delivered(steerId, { text: 'the right one' }));
    await expect(waiting).resolves.toMatchObject({ steerId, turnId, text: 'the right one' });
    pending.cancel();
  });

  it('settles every waiter of the same steer', async () => {
    const steerId = uuidv7();
    const a = await inConversation(steerId);
    const b = await inConversation(steerId);
    const both = Promise.all([a.wait(turnId, 10_000), b.wait(turnId, 10_000)]);
    await publish(delivered(steerId));
    const [ra, rb] = await both;
    expect(ra?.steerId).toBe(steerId);
    expect(rb?.steerId).toBe(steerId);
    a.cancel();
    b.cancel();
  });

  it('listens only to the conversations waited on, once each however many waits, and stops with the last wait', async () => {
    const other = uuidv7();
    const a = await inConversation(uuidv7());
    const b = await inConversation(uuidv7());
    expect(tails.size).toBe(1);
    // A settlement in a conversation nobody waits on here never reaches this gateway.
    const elsewhere = uuidv7();
    const c = await waiter.register({ tenantId: 'acme', steerId: elsewhere, conversationId: other });
    expect(tails.size).toBe(2);
    c.cancel();
    expect(tails.size).toBe(1);
    a.cancel();
    expect(tails.size).toBe(1);
    b.cancel();
    expect(tails.size).toBe(0);
  });

  it('finds the conversation of a turn it does not know through the read model, once, and listens there', async () => {
    const turn = uuidv7();
    const conv = uuidv7();
    let asked = 0;
    const query = await answer(nc, s.queryTurn, () => {
      asked++;
      return { id: turn, conversationId: conv } as TurnView;
    });
    try {
      const steerId = uuidv7();
      const pending = await waiter.register({ tenantId: 'acme', steerId, turnId: turn });
      const again = await waiter.register({ tenantId: 'acme', steerId: uuidv7(), turnId: turn });
      expect(asked).toBe(1);
      expect(interest.tenantWideCount).toBe(0);
      await publish(delivered(steerId, { turnId: turn, conversationId: conv }));
      await expect(pending.wait(turn, 10_000)).resolves.toMatchObject({ steerId, status: 'delivered' });
      pending.cancel();
      again.cancel();
      expect(tails.size).toBe(0);
    } finally {
      query.unsubscribe();
    }
  });

  it('listens to the tenant for a turn no one can place yet, and only while that wait lasts', async () => {
    const turn = uuidv7();
    const steerId = uuidv7();
    // No read model answers: the turn's conversation is unknown.
    const pending = await waiter.register({ tenantId: 'acme', steerId, turnId: turn });
    expect(interest.tenantWideCount).toBe(1);
    await publish(delivered(steerId, { turnId: turn, conversationId: uuidv7() }));
    await expect(pending.wait(turn, 10_000)).resolves.toMatchObject({ steerId, status: 'delivered' });
    pending.cancel();
    expect(interest.tenantWideCount).toBe(0);
  });

  it('holds no registration once its callers have cancelled', () => {
    expect(waiter.pending).toBe(0);
    expect(tails.size).toBe(0);
  });
});

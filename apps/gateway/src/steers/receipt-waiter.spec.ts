import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats, subjects, uuidv7, type SteerlineEvent } from '@steerline/contracts';
import { delivered as deliveredEvent, NATS_URL, publishEvent } from '../testing/harness';
import { ReceiptWaiter } from './receipt-waiter';

describe('ReceiptWaiter', () => {
  const s = subjects(`rwtest_${uuidv7().slice(-12)}`);
  const conversationId = uuidv7();
  const turnId = uuidv7();
  let nc: NatsConnection;
  let waiter: ReceiptWaiter;

  beforeAll(async () => {
    nc = await connectNats(NATS_URL, 'receipt-waiter-spec');
    waiter = new ReceiptWaiter(nc, s);
    await waiter.onModuleInit();
  });
  afterAll(async () => {
    waiter.onModuleDestroy();
    await nc.drain();
  });

  const delivered = (steerId: string, envelope: { turnId?: string; tenantId?: string } = {}) =>
    deliveredEvent({ conversationId, turnId, steerId, ...envelope });

  const publish = async (event: SteerlineEvent, steerIdHeader?: string) => {
    publishEvent(nc, s, event, steerIdHeader);
    await nc.flush();
  };

  it('keeps a settlement that arrives between register and wait', async () => {
    const steerId = uuidv7();
    const pending = waiter.register({ tenantId: 'acme', steerId });
    await publish(delivered(steerId));
    await new Promise((r) => setTimeout(r, 50));
    await expect(pending.wait(turnId, 1_000)).resolves.toMatchObject({ steerId, status: 'delivered', turnId });
    pending.cancel();
  });

  it('gives up with no receipt when the time runs out', async () => {
    const pending = waiter.register({ tenantId: 'acme', steerId: uuidv7() });
    await expect(pending.wait(turnId, 50)).resolves.toBeUndefined();
    pending.cancel();
  });

  it('stops waiting as soon as the client goes away', async () => {
    const pending = waiter.register({ tenantId: 'acme', steerId: uuidv7() });
    const gone = new AbortController();
    const started = Date.now();
    setTimeout(() => gone.abort(), 20);
    await expect(pending.wait(turnId, 10_000, gone.signal)).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(1_000);
    pending.cancel();
  });

  it('ignores a settlement of another turn or another tenant, and an event whose header misnames the steer', async () => {
    const steerId = uuidv7();
    const pending = waiter.register({ tenantId: 'acme', steerId });
    const waiting = pending.wait(turnId, 300);
    await publish(delivered(steerId, { turnId: uuidv7() }));
    await publish(delivered(steerId, { tenantId: 'globex' }));
    await publish(delivered(uuidv7()), steerId);
    await expect(waiting).resolves.toBeUndefined();
    pending.cancel();
  });

  it('settles every waiter of the same steer', async () => {
    const steerId = uuidv7();
    const a = waiter.register({ tenantId: 'acme', steerId });
    const b = waiter.register({ tenantId: 'acme', steerId });
    const both = Promise.all([a.wait(turnId, 1_000), b.wait(turnId, 1_000)]);
    await publish(delivered(steerId));
    const [ra, rb] = await both;
    expect(ra?.steerId).toBe(steerId);
    expect(rb?.steerId).toBe(steerId);
    a.cancel();
    b.cancel();
  });

  it('holds no registration once its callers have cancelled', () => {
    expect(waiter.pending).toBe(0);
  });
});

import { headers } from '@nats-io/transport-node';
import { Controller, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { EVENT_TYPE_HEADER, type SteerlineEvent } from '@steerline/contracts';
import { ensureStream } from '@steerline/runtime';
import { JetStreamEventsServer, eventContext } from '@steerline/runtime/nest';
import { loadFixtures } from '../../libs/contracts/src/fixtures';
import { eventually, openNats, uniquePrefix, type NatsHandle } from '../support/env';

const fixture = (type: string) => JSON.parse(loadFixtures().find((f) => f.file === `${type}.v1.json`)!.json) as SteerlineEvent;

/** What the handlers below saw, and how they behave; reset per test. */
const seen: { type: string; steerId?: string; seq: number; attempt: number }[] = [];
const behaviour = { failFirstDelivery: false, gate: undefined as Promise<void> | undefined };

@Controller()
class SettlementHandlers {
  @EventPattern('SteeringDelivered')
  async delivered(@Payload() event: SteerlineEvent, @Ctx() ctx: unknown) {
    const meta = eventContext(ctx).getMeta();
    seen.push({ type: event.type, steerId: (event.data as { steerId: string }).steerId, seq: meta.streamSeq, attempt: eventContext(ctx).getAttempt() });
    await behaviour.gate;
    if (behaviour.failFirstDelivery && seen.filter((s) => s.seq === meta.streamSeq).length === 1) throw new Error('not yet');
  }

  @EventPattern('TurnCompleted')
  completed(@Payload() event: SteerlineEvent, @Ctx() ctx: unknown) {
    seen.push({ type: event.type, seq: eventContext(ctx).getStreamSeq(), attempt: eventContext(ctx).getAttempt() });
  }
}

@Controller()
class MisspeltHandler {
  @EventPattern('SteerDeliverd')
  nothing(@Payload() _event: unknown) {}
}

describe('JetStreamEventsServer: Steerline events as a Nest microservice transport', () => {
  let nats: NatsHandle;
  let app: INestMicroservice | undefined;

  beforeEach(async () => {
    seen.length = 0;
    Object.assign(behaviour, { failFirstDelivery: false, gate: undefined });
    nats = await openNats(uniquePrefix());
    await ensureStream(nats.jsm, nats.s);
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await nats.close();
  });

  async function append(event: SteerlineEvent): Promise<number> {
    const h = headers();
    h.set(EVENT_TYPE_HEADER, event.type);
    return (await nats.js.publish(nats.s.conversationEvents(event.tenantId, event.conversationId), JSON.stringify(event), { headers: h })).seq;
  }
  async function listen(controller: new () => unknown, durable = 'nest-test') {
    const { Module } = await import('@nestjs/common');
    @Module({ controllers: [controller] })
    class TestModule {}
    app = await NestFactory.createMicroservice(TestModule, {
      logger: false,
      strategy: new JetStreamEventsServer({ connection: nats.nc, prefix: nats.s.prefix, durable, retryDelayMs: 50 }),
    });
    await app.listen();
  }
  const ackFloor = async () => (await nats.jsm.consumers.info(nats.s.stream, 'nest-test')).ack_floor.stream_seq;

  it('hands each handled event to its @EventPattern handler, decoded, in stream order, and skips types without one', async () => {
    const delivered = fixture('SteeringDelivered');
    const seqs = [await append(delivered), await append(fixture('SteerQueued')), await append(fixture('TurnCompleted'))];
    await listen(SettlementHandlers);
    await eventually(() => (seen.length === 2 ? true : undefined), 10_000, 'two events handled');
    expect(seen).toEqual([
      { type: 'SteeringDelivered', steerId: (delivered.data as { steerId: string }).steerId, seq: seqs[0], attempt: 1 },
      { type: 'TurnCompleted', seq: seqs[2], attempt: 1 },
    ]);
    await eventually(async () => ((await ackFloor()) === seqs[2] ? true : undefined), 5_000, 'everything acked');
  });

  it('acks an event only after its handler returns', async () => {
    let open!: () => void;
    behaviour.gate = new Promise((resolve) => (open = resolve));
    const seq = await append(fixture('SteeringDelivered'));
    await listen(SettlementHandlers);
    await eventually(() => (seen.length === 1 ? true : undefined), 10_000, 'the handler to be called');
    expect(await ackFloor()).toBeLessThan(seq);
    open();
    await eventually(async () => ((await ackFloor()) === seq ? true : undefined), 5_000, 'the ack after the handler returned');
  });

  it('a handler that throws gets the same event again, before any later one', async () => {
    behaviour.failFirstDelivery = true;
    const first = await append(fixture('SteeringDelivered'));
    const second = await append({ ...fixture('SteeringDelivered'), id: '0190a000-0000-7000-8000-000000000108' } as SteerlineEvent);
    await listen(SettlementHandlers);
    await eventually(() => (seen.filter((s) => s.seq === second).length === 2 ? true : undefined), 10_000, 'both events handled after their failures');
    expect(seen.map((s) => s.seq)).toEqual([first, first, second, second]);
    expect(seen.map((s) => s.attempt)).toEqual([1, 2, 1, 2]);
    await eventually(async () => ((await ackFloor()) === second ? true : undefined), 5_000, 'both acked');
  });

  it('refuses to start when an @EventPattern names no event type', async () => {
    await expect(listen(MisspeltHandler)).rejects.toThrow(/names no Steerline event type: SteerDeliverd/);
  });
});

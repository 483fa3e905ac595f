import { Controller, Inject, Logger } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { SteerlineEventOf } from '@steerline/contracts';
import { eventContext, type JetStreamEventContext } from '@steerline/runtime/nest';
import { SettlementStore } from './settlement-store';

/**
 * Receives every steer's settlement — delivered into the model's context, or
 * dropped with a reason — as a decoded, upcast event, and records it. The
 * transport acks an event after its handler returns; a handler that throws
 * gets it again.
 */
@Controller()
export class SettlementsController {
  private readonly log = new Logger('settlements');

  constructor(@Inject(SettlementStore) private readonly store: SettlementStore) {}

  @EventPattern('SteeringDelivered')
  delivered(@Payload() event: SteerlineEventOf<'SteeringDelivered'>, @Ctx() ctx: unknown): void {
    this.record(event, eventContext(ctx), `delivered at step ${event.data.step}`);
  }

  @EventPattern('SteerDropped')
  dropped(@Payload() event: SteerlineEventOf<'SteerDropped'>, @Ctx() ctx: unknown): void {
    this.record(event, eventContext(ctx), `dropped (${event.data.reason})`);
  }

  private record(event: SteerlineEventOf<'SteeringDelivered' | 'SteerDropped'>, ctx: JetStreamEventContext, outcome: string): void {
    const { steerId } = event.data;
    this.store.append({ seq: ctx.getStreamSeq(), type: event.type, steerId, turnId: event.turnId, outcome });
    this.log.log(`steer ${outcome}`, { steerId, turnId: event.turnId, streamSeq: ctx.getStreamSeq(), attempt: ctx.getAttempt() });
  }
}

import { BaseRpcContext } from '@nestjs/microservices';
import type { EventMeta } from '../consumer-kit';

/**
 * What `@Ctx()` gives a handler of `JetStreamEventsServer`: where the event
 * sits in the stream. `getStreamSeq()` is the number to store with the
 * handler's effects when it keeps its own checkpoint (`loadCheckpoint`).
 */
export class JetStreamEventContext extends BaseRpcContext<[EventMeta, number]> {
  getMeta(): EventMeta {
    return this.args[0];
  }

  getStreamSeq(): number {
    return this.args[0].streamSeq;
  }

  /**
   * 1 the first time this process hands the event to a handler; 2, 3… each
   * time again after the handler threw. (JetStream's own `deliveryCount` in
   * `getMeta()` starts again at 1 when the transport follows again from a failed
   * event, and after a restart.)
   */
  getAttempt(): number {
    return this.args[1];
  }
}

/**
 * `@Ctx() ctx: unknown` → the event's context. Nest 12 types an
 * `@EventPattern` handler as `(data, ...args: unknown[])`, so a parameter
 * declared as `JetStreamEventContext` does not compile; this narrows it.
 */
export function eventContext(ctx: unknown): JetStreamEventContext {
  if (ctx instanceof JetStreamEventContext) return ctx;
  throw new TypeError('not a JetStreamEventContext: is this handler served by JetStreamEventsServer?');
}

import type { NatsConnection } from '@nats-io/transport-node';
import { Logger } from '@nestjs/common';
import { Server, type CustomTransportStrategy } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { consumeEvents, type EventConsumer, type EventMeta } from '../consumer-kit';
import { EVENT_TYPES, type EventType, SteerlineError, type SteerlineEvent, type UpcasterRegistry } from '@steerline/contracts';
import { connectNats } from '../nats';
import { JetStreamEventContext } from './jetstream.context';

export interface JetStreamEventsOptions {
  /** An open connection (yours to close), or a NATS URL (comma-separated servers) to connect to. */
  connection: NatsConnection | string;
  /** The deployment's subject prefix (`STEERLINE_PREFIX`); default `steerline`. */
  prefix?: string;
  /**
   * The durable consumer's name: JetStream keeps its position (the last
   * acked message) across restarts. One running app per name: two apps
   * with the same name share — and split — one position.
   */
  durable: string;
  /**
   * Your own checkpoint, when you store one with your effects: the last
   * stream sequence you handled (`JetStreamEventContext.getStreamSeq()`), or
   * undefined for none. Read at every (re)start; it wins over the durable's
   * position, so an event handled just before a crash — its effect stored,
   * its ack lost — is not handled again. Without it, delivery is at least once.
   */
  loadCheckpoint?(): Promise<number | undefined> | number | undefined;
  upcasters?: UpcasterRegistry;
  /** Wait before following again after a handler threw (doubles up to 30 s; reset by a handled event). Default 1000. */
  retryDelayMs?: number;
}

const MAX_RETRY_DELAY_MS = 30_000;

/**
 * A Nest transport over the Steerline event stream: the events of
 * `@EventPattern('SteeringDelivered')` (any event type) handlers reach them
 * decoded and upcast, as `SteerlineEvent`s, with `@Ctx()` a
 * `JetStreamEventContext`.
 *
 * One durable JetStream pull consumer (`consumeEvents` of the consumer kit),
 * one event at a time in stream order. An event is acked after its handler
 * returns (or its Observable completes). When a handler throws, the event
 * is not acked (nak): after `retryDelayMs` the consumer starts again from
 * that event, so it is delivered again before any later one. Only the types
 * that have a handler are decoded; a pattern that names no event type is
 * refused at start-up.
 *
 *   NestFactory.createMicroservice(AppModule, {
 *     strategy: new JetStreamEventsServer({ connection: 'nats://…', durable: 'billing' }),
 *   });
 */
export class JetStreamEventsServer extends Server implements CustomTransportStrategy {
  // Handler failures are awaited here and turned into a redelivery, not only logged.
  override readonly propagatesEventHandlerErrors = true;
  protected override readonly logger = new Logger(JetStreamEventsServer.name);
  private nc?: NatsConnection;
  private consumer?: EventConsumer;
  private closing = false;
  private retryDelayMs: number;
  private retryTimer?: NodeJS.Timeout;
  /** The event whose handler threw last, and how many times in a row. */
  private failed = { seq: 0, times: 0 };

  constructor(private readonly options: JetStreamEventsOptions) {
    super();
    this.retryDelayMs = options.retryDelayMs ?? 1000;
  }

  /** The event types with a handler. */
  types(): EventType[] {
    const patterns = [...this.messageHandlers.keys()];
    const unknown = patterns.filter((p) => !(EVENT_TYPES as readonly string[]).includes(p));
    if (unknown.length) throw new SteerlineError('invalid_request', `@EventPattern names no Steerline event type: ${unknown.join(', ')} (known: ${EVENT_TYPES.join(', ')})`);
    return patterns as EventType[];
  }

  async listen(callback: (err?: unknown) => void): Promise<void> {
    try {
      const types = this.types();
      const { connection } = this.options;
      this.nc = typeof connection === 'string' ? await connectNats(connection, `nest-${this.options.durable}`) : connection;
      await this.follow(types);
      callback();
    } catch (err) {
      callback(err);
    }
  }

  private async follow(types: EventType[]): Promise<void> {
    const stored = await this.options.loadCheckpoint?.();
    const consumer = await consumeEvents({
      nc: this.nc!,
      prefix: this.options.prefix,
      durable: this.options.durable,
      types,
      fromSeq: stored === undefined ? undefined : stored + 1,
      upcasters: this.options.upcasters,
      onEvent: (event, meta) => this.dispatch(event, meta),
    });
    this.consumer = consumer;
    // Closed while this start was under way (a retry): stop what it started.
    if (this.closing) return void (await consumer.stop());
    consumer.done.then(
      () => undefined,
      (err: unknown) => this.retry(types, err),
    );
  }

  /** A handler threw (or the stream failed): the event was not acked; follow again from it after a while. */
  private retry(types: EventType[], err: unknown): void {
    if (this.closing) return;
    const delay = this.retryDelayMs;
    this.retryDelayMs = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
    this.logger.error(`${this.options.durable}: ${err instanceof Error ? err.message : String(err)}; following again in ${delay} ms`);
    this.retryTimer = setTimeout(() => {
      this.follow(types).catch((again: unknown) => this.retry(types, again));
    }, delay);
  }

  private async dispatch(event: SteerlineEvent, meta: EventMeta): Promise<void> {
    const attempt = this.failed.seq === meta.streamSeq ? this.failed.times + 1 : 1;
    try {
      await this.handleEvent(event.type, { pattern: event.type, data: event }, new JetStreamEventContext([meta, attempt]));
    } catch (err) {
      this.failed = { seq: meta.streamSeq, times: attempt };
      throw err;
    }
    this.failed = { seq: 0, times: 0 };
    this.retryDelayMs = this.options.retryDelayMs ?? 1000;
  }

  /**
   * Like Nest's, inside the processing hooks (interceptors of tracing and
   * logging libraries use them), but awaited to the end — an Observable's too —
   * and a failure rejects: then there is no ack.
   */
  override async handleEvent(pattern: string, packet: { pattern: unknown; data: unknown }, context: JetStreamEventContext): Promise<void> {
    const handler = this.getHandlerByPattern(pattern);
    if (!handler) return;
    await new Promise<void>((resolve, reject) => {
      const hooked = this.runWithProcessingHooks(context, async (runEndHook) => {
        try {
          const result: unknown = await handler(packet.data, context);
          if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
          resolve();
        } catch (err) {
          // Nest's exception filter turns a throw into an errored stream of `{ status, message }`.
          reject(err instanceof Error ? err : new Error(`the ${pattern} handler failed: ${JSON.stringify(err)}`));
        } finally {
          runEndHook();
        }
      }) as unknown;
      // A hook that fails before running the handler fails the event too.
      if (hooked instanceof Promise) hooked.catch(reject);
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.retryTimer);
    await this.consumer?.stop();
    if (typeof this.options.connection === 'string' && this.nc && !this.nc.isClosed()) await this.nc.drain();
  }

  on(): never {
    throw new Error('JetStreamEventsServer has no events to listen to');
  }

  unwrap<T>(): T {
    if (!this.nc) throw new Error('not listening yet: call listen() (app.listen / startAllMicroservices) first');
    return this.nc as T;
  }
}

import { once } from 'node:events';
import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { Match, type NatsConnection } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, type OrderedConsumerOptions } from '@nats-io/jetstream';
import { decodeJson, EVENT_TYPE_HEADER, SteerlineError, type Subjects } from '@steerline/contracts';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import type { HttpResponse } from '../http/http.types';
import { GatewayMetrics } from '../observability/metrics';
import { EventLogClient } from '../nats/event-log.client';
import { NATS_CONNECTION, SUBJECTS } from '../nats/nats.tokens';
import { sseComment, sseEvent, sseRetry } from './sse';

/** What a client is told to wait before reconnecting (EventSource's `retry`). */
const RECONNECT_HINT_MS = 1_000;
// Messages the ordered consumer pulls ahead of the client; a slow client holds at most this many.
const PULL_AHEAD = 256;

export interface StreamRequest {
  tenantId: string;
  conversationId: string;
  /** The last stream sequence the client has; events after it are sent. */
  after: number;
}

/**
 * Streams one conversation's events from the JetStream log as Server-Sent
 * Events: an ordered consumer filtered on the conversation's subject replays
 * from `after + 1` and then follows live. Each event's `id` is its stream
 * sequence, so a client that reconnects with `Last-Event-ID` (to this gateway
 * or any other) continues with no gap and no duplicate: the log, not the
 * gateway, holds the position.
 */
@Injectable()
export class EventStreams implements OnModuleDestroy {
  private readonly log = new Logger('events');
  private readonly open = new Set<() => void>();
  private closing = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(EventLogClient) private readonly eventLog: EventLogClient,
    @Inject(GatewayMetrics) metrics: GatewayMetrics,
  ) {
    metrics.countStreams(() => this.open.size);
  }

  /** Ends every stream; clients reconnect with their Last-Event-ID (to another gateway). */
  onModuleDestroy(): void {
    this.closing = true;
    for (const end of [...this.open]) end();
  }

  /**
   * Checks the conversation exists for this tenant (errors are thrown before
   * any byte is written, so they get the usual error answer), then streams
   * until the client goes away or the gateway shuts down.
   */
  async stream(req: StreamRequest, res: HttpResponse): Promise<void> {
    if (this.closing) throw new SteerlineError('unavailable', 'the gateway is shutting down');
    await this.eventLog.mustExist(req.tenantId, req.conversationId);
    const subject = this.s.conversationEvents(req.tenantId, req.conversationId);

    const consumer = await jetstream(this.nc)
      .consumers.get(this.s.stream, consumerOptions(subject, req.after))
      .catch((err: unknown) => {
        throw new SteerlineError('unavailable', `the event log does not answer: ${(err as Error).message}`);
      });
    const messages = await consumer.consume({ max_messages: PULL_AHEAD });
    const heartbeat = setInterval(() => {
      if (!res.writableEnded) res.write(sseComment('heartbeat'));
    }, this.config.sseHeartbeatMs);
    const end = () => {
      clearInterval(heartbeat);
      void messages.close().catch(() => undefined);
      if (!res.writableEnded) res.end();
    };
    this.open.add(end);
    res.once('close', end);
    // A client gone while the consumer was set up has already had its 'close'.
    if (res.closed || res.socket?.destroyed !== false) end();
    try {
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        // nginx and friends buffer responses unless told not to.
        'X-Accel-Buffering': 'no',
      });
      res.write(sseRetry(RECONNECT_HINT_MS));
      for await (const m of messages) {
        if (res.writableEnded) break;
        const type = m.headers?.get(EVENT_TYPE_HEADER, Match.IgnoreCase) || typeOf(m.data);
        // The stored bytes are the event: sent as they are, never re-encoded.
        if (!res.write(sseEvent(m.seq, type, Buffer.from(m.data).toString('utf8')))) await drained(res);
      }
    } catch (err) {
      // Headers are out: the only honest answer left is to end the stream; the client resumes.
      this.log.warn('event stream ended by an error', { conversationId: req.conversationId, tenantId: req.tenantId, error: (err as Error).message });
    } finally {
      this.open.delete(end);
      end();
      await consumer.delete().catch(() => undefined);
    }
  }
}

function consumerOptions(subject: string, after: number): Partial<OrderedConsumerOptions> {
  if (after === 0) return { filter_subjects: subject, deliver_policy: DeliverPolicy.All };
  return { filter_subjects: subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 };
}

// Only for a message written without the type header (not by this engine).
function typeOf(data: Uint8Array): string {
  try {
    const type = (decodeJson(data) as { type?: unknown }).type;
    return typeof type === 'string' ? type : 'message';
  } catch {
    return 'message';
  }
}

async function drained(res: HttpResponse): Promise<void> {
  if (res.writableEnded || res.destroyed) return;
  await Promise.race([once(res, 'drain'), once(res, 'close')]);
}

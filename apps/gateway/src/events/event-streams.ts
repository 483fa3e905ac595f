import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { SteerlineError } from '@steerline/contracts';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import type { HttpResponse } from '../http/http.types';
import { GatewayMetrics } from '../observability/metrics';
import { ConversationTails } from './conversation-tails';
import { EventWatcher } from './event-watcher';
import { sseRetry } from './sse';

/** What a client is told to wait before reconnecting (EventSource's `retry`). */
const RECONNECT_HINT_MS = 1_000;

export interface StreamRequest {
  tenantId: string;
  conversationId: string;
  /** Who the per-key cap counts against: the API key, or the client's address on an open API. */
  clientKey: string;
  /** The last stream sequence the client has; events after it are sent. */
  after: number;
  /** Interleave live messages (docs/design.md §11); `?live=0` leaves them out. */
  live: boolean;
}

/**
 * Streams one conversation's events as Server-Sent Events: replayed from the
 * JetStream log, then followed through the gateway's shared per-conversation
 * subscription (see EventWatcher for why the switch-over is exact). Each
 * event's `id` is its stream sequence, so a client that reconnects with
 * `Last-Event-ID` (to this gateway or any other) continues with no gap and no
 * duplicate: the log, not the gateway, holds the position. A watcher holds
 * no JetStream consumer at any time: its replay is direct gets.
 */
@Injectable()
export class EventStreams implements OnModuleDestroy {
  private readonly open = new Set<EventWatcher>();
  /** Open streams per client key, for the per-key cap; counts reservations made before a stream opens too. */
  private readonly perKey = new Map<string, number>();
  private reserved = 0;
  private closing = false;
  // One timer for every stream's heartbeat, not one per stream.
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(ConversationTails) private readonly tails: ConversationTails,
    @Inject(GatewayMetrics) metrics: GatewayMetrics,
  ) {
    metrics.countStreams(() => this.open.size);
    metrics.gauge('steerline_event_streams_live', 'Event streams past their replay, following their conversation live', () => this.stats().live);
    metrics.gauge('steerline_watched_conversations', 'Conversations this gateway subscribes to, for its event streams and receipt waits', () => this.tails.size);
    this.heartbeat = setInterval(() => {
      for (const w of [...this.open]) w.heartbeat();
    }, config.sseHeartbeatMs);
    this.heartbeat.unref();
  }

  /** Ends every stream; clients reconnect with their Last-Event-ID (to another gateway). */
  onModuleDestroy(): void {
    this.closing = true;
    clearInterval(this.heartbeat);
    for (const w of [...this.open]) w.end();
  }

  /** Streams open here, and how many of them follow their conversation live (replay done). */
  stats(): { open: number; live: number; conversations: number } {
    let live = 0;
    for (const w of this.open) if (w.isLive) live++;
    return { open: this.open.size, live, conversations: this.tails.size };
  }

  /**
   * Checks the caps and that the conversation exists for this tenant (errors
   * are thrown before any byte is written, so they get the usual error
   * answer), then streams until the client goes away or the gateway shuts down.
   */
  async stream(req: StreamRequest, res: HttpResponse): Promise<void> {
    if (this.closing) throw new SteerlineError('unavailable', 'the gateway is shutting down');
    const release = this.reserve(req.clientKey);
    try {
      // A direct get (any replica) rather than the stream leader's API; the other tenant's conversation reads as none.
      if (!(await this.tails.next(req.tenantId, req.conversationId, 1))) {
        throw new SteerlineError('not_found', `conversation ${req.conversationId} not found`, { conversationId: req.conversationId });
      }
      await this.follow(req, res);
    } finally {
      release();
    }
  }

  private async follow(req: StreamRequest, res: HttpResponse): Promise<void> {
    let leave: (() => void) | undefined;
    let ended!: () => void;
    const done = new Promise<void>((resolve) => (ended = resolve));
    const watcher = new EventWatcher(res, {
      after: req.after,
      live: req.live,
      bufferBytes: this.config.sseBufferBytes,
      next: (fromSeq) => this.tails.next(req.tenantId, req.conversationId, fromSeq),
      latest: () => this.tails.latest(req.tenantId, req.conversationId),
      onEnd: () => {
        this.open.delete(watcher);
        leave?.();
        ended();
      },
    });
    // Subscribed (and live on the server) before the replay reads the log, so nothing falls between.
    leave = await this.tails.join(req.tenantId, req.conversationId, watcher).catch((err: unknown) => {
      throw new SteerlineError('unavailable', `NATS does not answer: ${(err as Error).message}`);
    });
    if (this.closing || res.closed || res.socket?.destroyed !== false) {
      leave();
      return;
    }
    this.open.add(watcher);
    res.once('close', () => watcher.end());
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      // nginx and friends buffer responses unless told not to.
      'X-Accel-Buffering': 'no',
    });
    res.write(sseRetry(RECONNECT_HINT_MS));
    watcher.start();
    await done;
  }

  /** Counts the stream against the caps, or refuses it with 429 rate_limited. */
  private reserve(key: string): () => void {
    const { sseMaxStreams: max, sseMaxStreamsPerKey: maxPerKey } = this.config;
    if (this.reserved >= max) {
      throw new SteerlineError('rate_limited', `this gateway already serves ${max} event streams; retry later (or on another gateway)`, { limit: max });
    }
    const n = this.perKey.get(key) ?? 0;
    if (n >= maxPerKey) throw new SteerlineError('rate_limited', `this client already has ${maxPerKey} event streams open here`, { limit: maxPerKey });
    this.reserved++;
    this.perKey.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.reserved--;
      const left = (this.perKey.get(key) ?? 1) - 1;
      if (left > 0) this.perKey.set(key, left);
      else this.perKey.delete(key);
    };
  }
}

import { NoRespondersError, TimeoutError, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { JetStreamApiError, JetStreamError } from '@nats-io/jetstream';
import { inboxFor } from '@steerline/runtime';

interface Waiting {
  resolve(seq: number): void;
  reject(err: Error): void;
  subject: string;
  deadline: number;
}

/** A JetStream PubAck as the server sends it: `{stream, seq, duplicate}` or `{error}`. */
interface PubAckBody {
  stream?: string;
  seq?: number;
  error?: { code: number; err_code: number; description: string };
}

/**
 * JetStream publishes whose acknowledgements come to one subscription of this
 * log's own (`<inbox>.<token>`), matched here by token. nats.js's
 * `js.publish` is a request each: a header object for its options, a mux
 * entry, a timer, a deferred and a parsed ack object per append, which was a
 * third of the engine's CPU per event. The errors are nats.js's own
 * (`JetStreamApiError` with the server's `err_code`, `TimeoutError`,
 * `NoRespondersError` when no stream listens), so callers tell them apart
 * the same way. Timeouts are found by one sweeping timer, running only while
 * acks are awaited; an ack is thus given up between `timeoutMs` and 1.25× it.
 */
export class AckInbox {
  private sub?: Subscription;
  private prefix = '';
  private next = 0;
  private readonly waiting = new Map<string, Waiting>();
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly nc: NatsConnection,
    private readonly timeoutMs: number,
  ) {}

  /** Publishes `data` to `subject` and resolves with the stream sequence the server stored it at. */
  publish(subject: string, data: Uint8Array, headers: MsgHdrs): Promise<number> {
    const token = String(this.next++);
    const reply = this.replyPrefix() + token;
    // Throws before sending (over max_payload, a closed connection): nothing awaits then.
    this.nc.publish(subject, data, { reply, headers });
    return new Promise<number>((resolve, reject) => {
      this.waiting.set(token, { resolve, reject, subject, deadline: Date.now() + this.timeoutMs });
      this.sweeper ??= setInterval(() => this.sweep(), Math.max(10, this.timeoutMs / 4)).unref();
    });
  }

  private replyPrefix(): string {
    if (!this.sub) {
      const inbox = inboxFor(this.nc);
      this.prefix = `${inbox}.`;
      this.sub = this.nc.subscribe(`${inbox}.*`, { callback: (_err, msg) => this.answer(msg) });
      // The connection closed: nothing will answer what is awaited.
      const closed = () => this.failAll(new Error('the ack subscription closed'));
      void this.sub.closed.then(closed, closed);
    }
    return this.prefix;
  }

  private answer(msg: Msg): void {
    const token = msg.subject.slice(this.prefix.length);
    const w = this.waiting.get(token);
    if (!w) return; // timed out already; a retry with the same message id gets its own answer
    this.waiting.delete(token);
    if (msg.headers?.code === 503) return w.reject(new NoRespondersError(w.subject));
    let ack: PubAckBody;
    try {
      ack = msg.json<PubAckBody>();
    } catch (err) {
      return w.reject(new JetStreamError('invalid ack response', { cause: err }));
    }
    if (ack.error) return w.reject(new JetStreamApiError(ack.error));
    if (!ack.stream || typeof ack.seq !== 'number') return w.reject(new JetStreamError('invalid ack response'));
    w.resolve(ack.seq);
  }

  private sweep(): void {
    const now = Date.now();
    // In the order they were sent, so by deadline: the first one still in time ends the sweep.
    for (const [token, w] of this.waiting) {
      if (w.deadline > now) break;
      this.waiting.delete(token);
      w.reject(new TimeoutError());
    }
    if (this.waiting.size === 0) this.stopSweeping();
  }

  private failAll(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
    this.stopSweeping();
    this.sub = undefined;
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

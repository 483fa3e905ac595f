import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { Match, type Msg } from '@nats-io/transport-node';
import { EVENT_TYPE_HEADER, decodeJson, type SteerlineEventOf } from '@steerline/contracts';
import { GatewayMetrics } from '../observability/metrics';
import { ReceiptWaiter } from './receipt-waiter';

const COUNTED: ReadonlySet<string> = new Set(['SteerQueued', 'SteeringDelivered', 'SteerDropped']);
// Steers remembered for de-duplication and latency; the oldest are forgotten
// first, so memory stays bounded however long the gateway runs.
const REMEMBERED = 50_000;

type Seen = { state: 'queued'; at: number } | { state: 'settled' };

/**
 * Counts steers accepted, delivered and dropped from the event messages the
 * receipt waiter already receives. Each steer counts once per state: a core
 * subscriber also sees an append that the log deduplicated (a retried
 * `Nats-Msg-Id`), so counting messages would over-count.
 */
@Injectable()
export class SteerTally implements OnModuleInit {
  private readonly log = new Logger('metrics');
  private readonly seen = new Map<string, Seen>();

  constructor(
    @Inject(ReceiptWaiter) private readonly waiter: ReceiptWaiter,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
  ) {}

  onModuleInit(): void {
    this.metrics.countWaiting(() => this.waiter.pending);
    this.waiter.observe((msg) => this.count(msg));
  }

  private count(msg: Msg): void {
    const type = msg.headers?.get(EVENT_TYPE_HEADER, Match.IgnoreCase);
    if (!type || !COUNTED.has(type)) return;
    // Every steer event of the deployment passes here: a plain parse, not a full
    // schema check, keeps counting cheap on a busy gateway; a malformed one is skipped.
    const event = readCounted(msg.data);
    if (!event) {
      this.log.warn('steer event not readable', { subject: msg.subject });
      return;
    }
    this.apply(event);
  }

  private apply(event: CountedEvent): void {
    const key = `${event.tenantId}/${event.turnId}/${event.data.steerId}`;
    const before = this.seen.get(key);
    if (event.type === 'SteerQueued') {
      if (before) return;
      this.metrics.steersAccepted.inc();
      this.remember(key, { state: 'queued', at: Date.parse(event.at) });
      return;
    }
    if (before?.state === 'settled') return;
    if (event.type === 'SteeringDelivered') {
      this.metrics.steersDelivered.inc({ boundary: event.data.boundary });
      // Only when this gateway saw the acceptance; a steer accepted before it started has no start time here.
      if (before) this.metrics.deliveryLatency.observe(Math.max(0, Date.parse(event.at) - before.at) / 1000);
    } else {
      this.metrics.steersDropped.inc({ reason: event.data.reason });
    }
    this.remember(key, { state: 'settled' });
  }

  private remember(key: string, seen: Seen): void {
    this.seen.delete(key);
    this.seen.set(key, seen);
    if (this.seen.size > REMEMBERED) this.seen.delete(this.seen.keys().next().value as string);
  }
}

type CountedEvent = SteerlineEventOf<'SteerQueued'> | SteerlineEventOf<'SteeringDelivered'> | SteerlineEventOf<'SteerDropped'>;

function readCounted(data: Uint8Array): CountedEvent | undefined {
  try {
    const e = decodeJson(data) as CountedEvent;
    const ok = COUNTED.has(e?.type) && typeof e.tenantId === 'string' && typeof e.turnId === 'string' && typeof e.at === 'string' && typeof e.data?.steerId === 'string';
    return ok ? e : undefined;
  } catch {
    return undefined;
  }
}

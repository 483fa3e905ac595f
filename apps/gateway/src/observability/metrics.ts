import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The gateway's Prometheus metrics, on a registry of its own (not prom-client's
 * global one) so several gateways in one process, as in the tests, do not
 * share counters.
 *
 * HTTP only: what this gateway serves. Steers, turns, model and tool calls are
 * counted where they are decided — the engine's /metrics — and the projection's
 * progress by persistence; all of them sum across instances.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly waitingSources: Array<() => number> = [];
  private readonly streamSources: Array<() => number> = [];

  readonly httpDuration = new Histogram({
    name: 'steerline_http_request_duration_seconds',
    help: 'HTTP request duration by method, route template and status (event streams: how long they stayed open)',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly rateLimitStoreFailures = new Counter({
    name: 'steerline_rate_limit_store_failures_total',
    help: 'Calls to the shared rate-limit store (NATS KV) that failed or timed out; the gateway then fails open to its own limit',
    registers: [this.registry],
  });
  readonly rateLimitFailedOpen = new Counter({
    name: 'steerline_rate_limit_failed_open_total',
    help: 'Requests limited by this gateway alone because the shared rate-limit store did not answer',
    registers: [this.registry],
  });

  constructor() {
    const sum = (sources: Array<() => number>) => sources.reduce((n, read) => n + read(), 0);
    const waiting = this.waitingSources;
    const streams = this.streamSources;
    new Gauge({
      name: 'steerline_waiting_requests',
      help: 'Requests waiting for a steer’s settlement (Prefer: wait)',
      registers: [this.registry],
      collect() {
        this.set(sum(waiting));
      },
    });
    new Gauge({
      name: 'steerline_event_streams_open',
      help: 'Server-Sent Event streams open on this gateway',
      registers: [this.registry],
      collect() {
        this.set(sum(streams));
      },
    });
  }

  /** Gauges are read when scraped, from whoever holds the number. */
  countWaiting(read: () => number): void {
    this.waitingSources.push(read);
  }

  countStreams(read: () => number): void {
    this.streamSources.push(read);
  }

  /** A gauge of its own, read when scraped. */
  gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }
}

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { SteerlineEvent } from '@steerline/contracts';
import { Remembered } from './remembered';

const SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The engine's Prometheus metrics, counted where the facts are made: every
 * event this engine appends to the log, once, when the log acknowledges it
 * (`record`, called by the EventLog). Only engines append events, and each event
 * is appended by one of them, so the sum of a counter over all engines is the
 * log's own count — aggregate engines with `sum`.
 *
 * Latencies are measured between two events this engine appended (their own
 * timestamps); a steer or model request started on another engine before a
 * resume is counted but not timed.
 */
export class EngineMetrics {
  readonly registry = new Registry();
  /** When each steer was queued and each model request sent (ms), and the boundary each request follows. */
  private readonly startedAt = new Remembered<number>();
  private readonly boundaryOf = new Remembered<string>();
  private readonly r = [this.registry];

  /** Appended since the last scrape, by type: added to `events` when scraped (prom-client's labelled `inc` hashes its labels each time, on every event). */
  private readonly eventsSinceScrape = new Map<string, number>();
  readonly events = new Counter({
    name: 'steerline_events_appended_total',
    help: 'Events this engine appended to the log, by type',
    labelNames: ['type'],
    registers: this.r,
    collect: () => this.flushEventCounts(),
  });
  readonly steersAccepted = new Counter({ name: 'steerline_steers_accepted_total', help: 'Steers accepted (SteerQueued appended)', registers: this.r });
  readonly steersDelivered = new Counter({ name: 'steerline_steers_delivered_total', help: 'Steers delivered to the model (SteeringDelivered appended), by boundary', labelNames: ['boundary'], registers: this.r });
  readonly steersDropped = new Counter({ name: 'steerline_steers_dropped_total', help: 'Steers dropped (SteerDropped appended), by reason', labelNames: ['reason'], registers: this.r });
  readonly deliveryLatency = new Histogram({ name: 'steerline_steer_delivery_seconds', help: 'From a steer’s SteerQueued to its SteeringDelivered (both appended here)', buckets: SECONDS, registers: this.r });
  readonly turnsStarted = new Counter({ name: 'steerline_turns_started_total', help: 'Turns started (TurnStarted appended)', registers: this.r });
  readonly turnsQueued = new Counter({ name: 'steerline_turns_queued_total', help: 'Turns queued behind a running one (TurnQueued appended)', registers: this.r });
  readonly turnsEnded = new Counter({ name: 'steerline_turns_ended_total', help: 'Turns ended, by outcome (completed, cancelled, failed)', labelNames: ['outcome'], registers: this.r });
  readonly turnsResumed = new Counter({ name: 'steerline_turns_resumed_total', help: 'Turns adopted from a lost or stopped engine (TurnResumed appended)', registers: this.r });
  readonly boundaries = new Counter({ name: 'steerline_boundaries_total', help: 'Boundaries passed: model requests after the first of a turn, by what preceded them', labelNames: ['boundary'], registers: this.r });
  readonly modelRequests = new Counter({ name: 'steerline_model_requests_total', help: 'Model requests (ModelRequested appended)', registers: this.r });
  readonly modelLatency = new Histogram({ name: 'steerline_model_request_seconds', help: 'From ModelRequested to ModelResponded (both appended here)', buckets: SECONDS, registers: this.r });
  readonly modelTokens = new Counter({ name: 'steerline_model_tokens_total', help: 'Tokens the model reported, by kind (input, output)', labelNames: ['kind'], registers: this.r });
  readonly toolCalls = new Histogram({
    name: 'steerline_tool_call_seconds',
    help: 'Tool call durations (ToolCallFinished appended), by tool and outcome (ok, error)',
    labelNames: ['tool', 'outcome'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: this.r,
  });

  /** A gauge read when scraped (live turns, queued steers): from whoever holds the number. */
  gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: this.r,
      collect() {
        this.set(read());
      },
    });
  }

  /** One event the log acknowledged. Never throws: metrics must not fail an append. */
  record(event: SteerlineEvent): void {
    try {
      this.count(event);
    } catch {
      // A malformed event is the decider's bug and shows elsewhere; counting skips it.
    }
  }

  private flushEventCounts(): void {
    for (const [type, n] of this.eventsSinceScrape) this.events.inc({ type }, n);
    this.eventsSinceScrape.clear();
  }

  private count(e: SteerlineEvent): void {
    this.eventsSinceScrape.set(e.type, (this.eventsSinceScrape.get(e.type) ?? 0) + 1);
    const at = Date.parse(e.at);
    const turn = e.turnId ?? '';
    switch (e.type) {
      case 'SteerQueued':
        this.steersAccepted.inc();
        this.startedAt.set(`steer:${e.data.steerId}`, at);
        break;
      case 'SteeringDelivered': {
        this.steersDelivered.inc({ boundary: e.data.boundary });
        const queuedAt = this.startedAt.take(`steer:${e.data.steerId}`);
        if (queuedAt !== undefined) this.deliveryLatency.observe(Math.max(0, at - queuedAt) / 1000);
        this.boundaryOf.set(`${turn}:${e.data.requestStep}`, e.data.boundary);
        break;
      }
      case 'SteerDropped':
        this.steersDropped.inc({ reason: e.data.reason });
        this.startedAt.take(`steer:${e.data.steerId}`);
        break;
      case 'TurnStarted':
        this.turnsStarted.inc();
        break;
      case 'TurnQueued':
        this.turnsQueued.inc();
        break;
      case 'TurnResumed':
        this.turnsResumed.inc();
        break;
      case 'TurnCompleted':
      case 'TurnCancelled':
      case 'TurnFailed':
        this.turnsEnded.inc({ outcome: e.type.slice('Turn'.length).toLowerCase() });
        break;
      case 'ModelRequested':
        this.modelRequests.inc();
        this.startedAt.set(`model:${turn}:${e.data.step}`, at);
        // A request after the first follows tool results, or a text answer while steers waited (a continuation).
        if (e.data.step > 1) this.boundaries.inc({ boundary: this.boundaryOf.take(`${turn}:${e.data.step}`) ?? 'tool_results' });
        break;
      case 'ModelResponded': {
        const requestedAt = this.startedAt.take(`model:${turn}:${e.data.step}`);
        if (requestedAt !== undefined) this.modelLatency.observe(Math.max(0, at - requestedAt) / 1000);
        if (e.data.usage) {
          this.modelTokens.inc({ kind: 'input' }, e.data.usage.inputTokens);
          this.modelTokens.inc({ kind: 'output' }, e.data.usage.outputTokens);
        }
        break;
      }
      case 'ToolCallFinished':
        this.toolCalls.observe({ tool: e.data.name, outcome: e.data.ok ? 'ok' : 'error' }, e.data.durationMs / 1000);
        break;
    }
  }
}

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BatchOutcome } from '../projector/batch';

/** What the metrics read of a projector when scraped. */
export interface ProjectorReadings {
  /** The stream's last sequence minus the active generation's checkpoint. */
  lag(): Promise<number>;
  readonly checkpoint: number;
}

/**
 * The persistence service's Prometheus metrics, counted where the batches are
 * committed (`batch`, called by the projector after each commit): only the
 * instance that projects counts, so counters sum across instances. The lag and
 * the checkpoint are read from the stream and the database when scraped: every
 * instance reports the same numbers — aggregate them with `max`.
 */
export class PersistenceMetrics {
  readonly registry = new Registry();
  private readonly r = [this.registry];

  readonly batches = new Histogram({
    name: 'steerline_projection_batch_size',
    help: 'Log messages per committed projection batch',
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500],
    registers: this.r,
  });
  readonly applied = new Counter({ name: 'steerline_projection_events_applied_total', help: 'Events applied to the read models', registers: this.r });
  readonly duplicates = new Counter({ name: 'steerline_projection_duplicates_total', help: 'Events already applied, appended again, skipped', registers: this.r });
  readonly redelivered = new Counter({ name: 'steerline_projection_redelivered_total', help: 'Messages at or below the checkpoint (redeliveries), left alone', registers: this.r });
  readonly deadLetters = new Counter({ name: 'steerline_projection_dead_letters_total', help: 'Messages dead-lettered, by reason', labelNames: ['reason'], registers: this.r });
  readonly stalls = new Counter({ name: 'steerline_projection_stalls_total', help: 'Conversations stalled by a missing event of one of their turns', registers: this.r });
  readonly pagesAt = new Counter({
    name: 'steerline_conversation_pages_at_total',
    help: 'Conversation pages after the first of reads that ask their next page of the instance that answered (qry.conversation.at), by whether a page read ahead answered',
    labelNames: ['read_ahead'],
    registers: this.r,
  });

  /** One committed batch. Never throws: metrics must not fail a batch that committed. */
  batch(outcome: BatchOutcome): void {
    try {
      const messages = outcome.redelivered + outcome.applied + outcome.duplicates + outcome.rejected;
      this.batches.observe(messages);
      this.applied.inc(outcome.applied);
      this.duplicates.inc(outcome.duplicates);
      this.redelivered.inc(outcome.redelivered);
      for (const [reason, n] of Object.entries(outcome.rejectedBy)) this.deadLetters.inc({ reason }, n);
      this.stalls.inc(outcome.stalls.length);
    } catch {
      // Nothing to do: the batch stands, the next one counts.
    }
  }

  /** Gauges read from the projector when scraped. */
  watch(projector: ProjectorReadings): void {
    new Gauge({
      name: 'steerline_projection_lag_events',
      help: 'Events in the stream not yet projected (stream last sequence minus checkpoint)',
      registers: this.r,
      async collect() {
        this.set(await projector.lag());
      },
    });
    new Gauge({
      name: 'steerline_projection_checkpoint',
      help: 'The stream sequence this instance last committed or read as the checkpoint',
      registers: this.r,
      collect() {
        this.set(projector.checkpoint);
      },
    });
  }
}

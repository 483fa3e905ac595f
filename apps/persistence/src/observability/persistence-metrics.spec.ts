import { parseExposition, total } from '../../../../test/support/prometheus';
import { PersistenceMetrics } from './persistence-metrics';
import type { BatchOutcome } from '../projector/batch';

/** A metric's value for one label set (summed over the rest), 0 when it has none. */
async function value(metrics: PersistenceMetrics, name: string, labels: Record<string, string> = {}, suffix = ''): Promise<number> {
  return total([parseExposition(await metrics.registry.metrics())], `${name}${suffix}`, labels);
}

const outcome = (o: Partial<BatchOutcome>): BatchOutcome => ({ checkpoint: 0, redelivered: 0, applied: 0, duplicates: 0, rejected: 0, rejectedBy: {}, stalls: [], ...o });

describe('persistence metrics: counted from each committed batch', () => {
  it('counts applied events, batch sizes, dead letters by reason and stalls, and reads lag and checkpoint when scraped', async () => {
    const metrics = new PersistenceMetrics();
    metrics.batch(outcome({ checkpoint: 10, applied: 7, redelivered: 1, duplicates: 1, rejected: 1, rejectedBy: { not_json: 1 } }));
    const stall = { conversationId: 'c', turnId: 't', eventId: 'e', expectedSeq: 3, foundSeq: 5 } as unknown as BatchOutcome['stalls'][number];
    metrics.batch(outcome({ checkpoint: 13, rejected: 3, rejectedBy: { seq_gap: 1, conversation_stalled: 2 }, stalls: [stall] }));
    let lag = 4;
    metrics.watch({ lag: async () => lag, checkpoint: 13 });

    expect(await value(metrics, 'steerline_projection_events_applied_total')).toBe(7);
    expect(await value(metrics, 'steerline_projection_duplicates_total')).toBe(1);
    expect(await value(metrics, 'steerline_projection_redelivered_total')).toBe(1);
    expect(await value(metrics, 'steerline_projection_dead_letters_total', { reason: 'not_json' })).toBe(1);
    expect(await value(metrics, 'steerline_projection_dead_letters_total', { reason: 'conversation_stalled' })).toBe(2);
    expect(await value(metrics, 'steerline_projection_stalls_total')).toBe(1);
    expect(await value(metrics, 'steerline_projection_batch_size', {}, '_sum')).toBe(13);
    expect(await value(metrics, 'steerline_projection_batch_size', {}, '_count')).toBe(2);
    expect(await value(metrics, 'steerline_projection_lag_events')).toBe(4);
    lag = 0;
    expect(await value(metrics, 'steerline_projection_lag_events')).toBe(0);
    expect(await value(metrics, 'steerline_projection_checkpoint')).toBe(13);
  });
});

import type { SteerlineEvent } from '@steerline/contracts';
import { answerEnd, answerWithTools, run, startCommand, steer, steerId, toolDone } from '../turn/turn.fixtures';
import { parseExposition, total } from '../../../../test/support/prometheus';
import { EngineMetrics } from './engine-metrics';

/** A metric's value for one label set (summed over the rest), 0 when it has none. */
async function value(metrics: EngineMetrics, name: string, labels: Record<string, string> = {}, suffix = ''): Promise<number> {
  return total([parseExposition(await metrics.registry.metrics())], `${name}${suffix}`, labels);
}

const at = (events: SteerlineEvent[], ms: number[]) => events.map((e, i) => ({ ...e, at: new Date(ms[i] ?? 0).toISOString() }) as SteerlineEvent);

describe('engine metrics: counted from the events the engine appends', () => {
  it('counts a turn’s steers by settlement, its boundaries, model requests and tool calls, and its end, once per event', async () => {
    // Step 1 calls a tool; steer 1 waits for its boundary, steer 2 is withdrawn; step 2 answers and the turn completes.
    const { events } = run([
      startCommand(),
      answerWithTools(1),
      steer(1),
      steer(2),
      { type: 'WithdrawSteer', steerId: steerId(2) },
      toolDone(1),
      answerEnd(2),
    ]);
    const metrics = new EngineMetrics();
    for (const e of at(events, events.map((_, i) => 1_000 * i))) metrics.record(e);

    expect(await value(metrics, 'steerline_turns_started_total')).toBe(1);
    expect(await value(metrics, 'steerline_steers_accepted_total')).toBe(2);
    expect(await value(metrics, 'steerline_steers_delivered_total', { boundary: 'tool_results' })).toBe(1);
    expect(await value(metrics, 'steerline_steers_dropped_total', { reason: 'withdrawn' })).toBe(1);
    expect(await value(metrics, 'steerline_model_requests_total')).toBe(2);
    expect(await value(metrics, 'steerline_boundaries_total', { boundary: 'tool_results' })).toBe(1);
    expect(await value(metrics, 'steerline_tool_call_seconds', { tool: 'sleep', outcome: 'ok' }, '_count')).toBe(1);
    expect(await value(metrics, 'steerline_turns_ended_total', { outcome: 'completed' })).toBe(1);
    expect(await value(metrics, 'steerline_events_appended_total', { type: 'ModelRequested' })).toBe(2);
    // Timed by the events' own timestamps: steer 1 waited from its SteerQueued to its SteeringDelivered.
    const queued = events.findIndex((e) => e.type === 'SteerQueued');
    const delivered = events.findIndex((e) => e.type === 'SteeringDelivered');
    expect(await value(metrics, 'steerline_steer_delivery_seconds', {}, '_count')).toBe(1);
    expect(await value(metrics, 'steerline_steer_delivery_seconds', {}, '_sum')).toBe(delivered - queued);
    expect(await value(metrics, 'steerline_model_request_seconds', {}, '_count')).toBe(2);
  });

  it('labels a continuation as a turn_end boundary, counts tokens, and times nothing it did not see start', async () => {
    const { events } = run([startCommand(), steer(1), { type: 'RecordModelAnswer', step: 1, text: 'early', toolCalls: [], usage: { inputTokens: 7, outputTokens: 3 } }]);
    const metrics = new EngineMetrics();
    // As on an engine that resumed the turn: its TurnStarted and SteerQueued were appended elsewhere.
    const firstRequest = events.find((x) => x.type === 'ModelRequested');
    for (const e of events.filter((x) => x.type !== 'TurnStarted' && x.type !== 'SteerQueued' && x !== firstRequest)) metrics.record(e);
    expect(await value(metrics, 'steerline_steers_delivered_total', { boundary: 'turn_end' })).toBe(1);
    expect(await value(metrics, 'steerline_boundaries_total', { boundary: 'turn_end' })).toBe(1);
    expect(await value(metrics, 'steerline_boundaries_total', { boundary: 'tool_results' })).toBe(0);
    expect(await value(metrics, 'steerline_steer_delivery_seconds', {}, '_count')).toBe(0);
    expect(await value(metrics, 'steerline_model_request_seconds', {}, '_count')).toBe(0);
    expect(await value(metrics, 'steerline_model_tokens_total', { kind: 'input' })).toBe(7);
    expect(await value(metrics, 'steerline_model_tokens_total', { kind: 'output' })).toBe(3);
  });
});

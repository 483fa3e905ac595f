import { jetstream } from '@nats-io/jetstream';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_LIMITS, EVENT_TYPE_HEADER, encodeEvent, subjects, uuidv7, type EventData, type EventType, type SteerlineEvent } from '@steerline/contracts';
import { ensureStream, jetstreamManager } from '@steerline/runtime';

/**
 * Writes a log of realistic conversations straight into a fresh stream, as an
 * engine would have appended it, for the million-event rebuild and audit bench
 * (and, small, for tests of those tools). Every turn satisfies I1–I6.
 */

const PROMPTS = [
  'Refactor the payment module so that retries are idempotent and add tests for the edge cases we discussed',
  'Summarise the incident report and list the follow-up actions with owners',
  'Find out why the nightly export is slow and propose a fix',
  'Translate the onboarding guide into plain language for new support staff',
];
const STEERS = ['Keep it short.', 'Focus on the retry path first, the rest can wait.', 'Use the staging database, not production.', 'Stop after the summary; no code changes today.'];
const ANSWER = 'Here is what I found. The export spends most of its time serialising rows one at a time; batching them by 500 cuts it to a fifth. ';

/**
 * One turn of `conversationId`: 1–3 tool steps, up to three steers (most
 * delivered at a tool boundary, some withdrawn), completed, cancelled or failed.
 * `n` picks the shape, so a log is varied but reproducible.
 */
export function realisticTurn(tenantId: string, conversationId: string, n: number, at = new Date().toISOString()): SteerlineEvent[] {
  const turnId = uuidv7();
  let seq = 0;
  const out: SteerlineEvent[] = [];
  const push = <T extends Exclude<EventType, 'ConversationCreated'>>(type: T, data: EventData<T>) =>
    out.push({ id: uuidv7(), type, version: 1, tenantId, conversationId, turnId, seq: ++seq, at, data } as unknown as SteerlineEvent);
  const toolSteps = 1 + (n % 3);
  const steers = n % 4;
  push('TurnStarted', { prompt: PROMPTS[n % PROMPTS.length], model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, engineId: 'engine-bench' });
  let position = 0;
  let pending: { steerId: string; text: string; position: number }[] = [];
  let step = 1;
  push('ModelRequested', { step, steerIds: [] });
  for (; step <= toolSteps; step++) {
    const call = { id: `call_${step}_0`, name: step % 2 ? 'search' : 'read_file', args: { query: `step ${step} of ${PROMPTS[n % PROMPTS.length].slice(0, 30)}` } };
    push('ModelResponded', { step, text: `Looking into it (step ${step}).`, toolCalls: [call], usage: { inputTokens: 900 + step * 250, outputTokens: 120 } });
    push('ToolCallStarted', { step, toolCallId: call.id, name: call.name, args: call.args });
    if (position < steers) {
      const steerId = uuidv7();
      const text = STEERS[(n + position) % STEERS.length];
      position += 1;
      push('SteerQueued', { steerId, text, position, queueDepth: 1 });
      if ((n + position) % 5 === 0) push('SteerDropped', { steerId, text, position, reason: 'withdrawn' });
      else pending.push({ steerId, text, position });
    }
    push('ToolCallFinished', { step, toolCallId: call.id, name: call.name, ok: true, output: `${ANSWER.slice(0, 40 + ((n * step) % 80))}`, durationMs: 40 + ((n * 7) % 300) });
    for (const p of pending) {
      push('SteeringDelivered', { ...p, step, boundary: 'tool_results', requestStep: step + 1, afterToolCallIds: [call.id], rendered: `[steer] ${p.text}` });
    }
    push('ModelRequested', { step: step + 1, steerIds: pending.map((p) => p.steerId) });
    pending = [];
  }
  push('ModelResponded', { step, text: ANSWER.repeat(1 + (n % 3)), toolCalls: [], usage: { inputTokens: 2400, outputTokens: 300 } });
  if (n % 17 === 0) push('TurnCancelled', { steps: step, reason: 'cancelled by the user' });
  else if (n % 23 === 0) push('TurnFailed', { steps: step, error: { code: 'model_error', message: 'the model provider answered 529 three times' } });
  else push('TurnCompleted', { steps: step, text: ANSWER.repeat(1 + (n % 3)) });
  return out;
}

/**
 * Appends at least `count` events (whole turns) to the stream of `prefix`:
 * conversations of a few turns each, `interleave` of them in flight at a time.
 * Publishes in windows without awaiting each ack, so a million events take
 * seconds, not minutes. Returns how many events were written.
 */
export async function writeConversations(
  nc: NatsConnection,
  prefix: string,
  count: number,
  opts: { tenants?: string[]; interleave?: number; window?: number; onProgress?: (written: number) => void } = {},
): Promise<number> {
  const s = subjects(prefix);
  await ensureStream(await jetstreamManager(nc), s);
  const js = jetstream(nc);
  const interleave = opts.interleave ?? 50;
  const window = opts.window ?? 4_000;
  let written = 0;
  let inFlight: Promise<unknown>[] = [];
  let n = 0;
  const at = new Date().toISOString();
  const publish = async (event: SteerlineEvent) => {
    const h = headers();
    h.set(EVENT_TYPE_HEADER, event.type);
    // A bulk load: a window of thousands of acks may take longer than the client's 5 s default on a busy machine.
    inFlight.push(js.publish(s.conversationEvents(event.tenantId, event.conversationId), encodeEvent(event), { headers: h, timeout: 60_000 }));
    written += 1;
    if (inFlight.length >= window) {
      await Promise.all(inFlight);
      inFlight = [];
      opts.onProgress?.(written);
    }
  };
  while (written < count) {
    // A group of conversations whose turns interleave in the log, as concurrent users' do.
    const group = Array.from({ length: interleave }, () => {
      const tenantId = opts.tenants ? opts.tenants[n % opts.tenants.length] : `tenant-${n % 20}`;
      const conversationId = uuidv7();
      const created = { id: uuidv7(), type: 'ConversationCreated', version: 1, tenantId, conversationId, turnId: null, seq: 0, at, data: {} } as unknown as SteerlineEvent;
      const turns = Array.from({ length: 1 + (n % 4) }, (_, k) => realisticTurn(tenantId, conversationId, n + k, at));
      n += 1;
      return [created, ...turns.flat()];
    });
    const longest = Math.max(...group.map((g) => g.length));
    for (let i = 0; i < longest; i++) for (const events of group) if (i < events.length) await publish(events[i]);
  }
  await Promise.all(inFlight);
  opts.onProgress?.(written);
  return written;
}

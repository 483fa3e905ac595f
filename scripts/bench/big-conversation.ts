import { headers } from '@nats-io/transport-node';
import type { JetStreamClient } from '@nats-io/jetstream';
import { EVENT_TYPE_HEADER, EVENT_VERSION, encodeEvent, renderSteer, uuidv7, type EventData, type EventType, type SteerlineEvent, type Subjects } from '@steerline/contracts';

/**
 * A long conversation built from hand-made events, as an engine would have
 * appended them (gapless turn seqs, valid data), appended straight to the
 * log: the projector builds its read models as for any other. Far faster than
 * running thousands of real model and tool steps, for tests and the bench.
 */
export interface BigConversation {
  conversationId: string;
  tenantId: string;
  turnIds: string[];
  /** Steers delivered at a tool boundary, by turn. */
  steerIds: string[];
  events: SteerlineEvent[];
  /** Messages in the model context: prompts, answers, tool results, steers. */
  messages: number;
  /** UTF-8 bytes of the messages' content. */
  contentBytes: number;
}

export interface BigConversationOptions {
  tenantId?: string;
  /** At least this many messages (each step adds an answer and a tool result). */
  messages: number;
  /** Size of each tool result, in bytes (ASCII). */
  outputBytes: number;
  turns?: number;
}

const MODEL = { provider: 'scripted' as const, name: 'scripted', script: [] };
const LIMITS = { maxQueued: 5, maxContinuations: 10, maxSteps: 1000 };

export function bigConversation(opts: BigConversationOptions): BigConversation {
  const tenantId = opts.tenantId ?? 'default';
  const conversationId = uuidv7();
  let clock = Date.parse('2031-06-01T00:00:00.000Z');
  const at = () => new Date((clock += 10)).toISOString();
  const events: SteerlineEvent[] = [{ id: uuidv7(), type: 'ConversationCreated', version: EVENT_VERSION, tenantId, conversationId, turnId: null, seq: 0, at: at(), data: {} }];
  const turns = opts.turns ?? 5;
  const turnIds: string[] = [];
  const steerIds: string[] = [];
  const output = 'o'.repeat(Math.max(1, opts.outputBytes));
  let messages = 0;
  let contentBytes = 0;
  const perTurn = Math.ceil(opts.messages / turns);
  for (let t = 0; t < turns; t++) {
    const turnId = uuidv7();
    turnIds.push(turnId);
    let seq = 0;
    const add = <T extends Exclude<EventType, 'ConversationCreated'>>(type: T, data: EventData<T>) =>
      events.push({ id: uuidv7(), type, version: EVENT_VERSION, tenantId, conversationId, turnId, seq: ++seq, at: at(), data } as SteerlineEvent);
    const prompt = `turn ${t}: work through the list`;
    add('TurnStarted', { prompt, model: MODEL, limits: LIMITS, engineId: 'bench' });
    messages++;
    contentBytes += prompt.length;
    let step = 0;
    let steerIdsNext: string[] = [];
    // Each step: an answer with one tool call and its result (2 messages); the turn ends with a text answer.
    for (let produced = 1; produced + 2 < perTurn; produced += 2) {
      step++;
      add('ModelRequested', { step, steerIds: steerIdsNext });
      steerIdsNext = [];
      const callId = `call_${step}_0`;
      add('ModelResponded', { step, text: '', toolCalls: [{ id: callId, name: 'lookup', args: { page: step } }] });
      add('ToolCallStarted', { step, toolCallId: callId, name: 'lookup', args: { page: step } });
      add('ToolCallFinished', { step, toolCallId: callId, name: 'lookup', ok: true, output, durationMs: 1 });
      messages += 2;
      contentBytes += output.length + 2;
      if (step === 2) {
        // One steer per turn, delivered at this tool boundary: receipts have something to read.
        const steerId = uuidv7();
        steerIds.push(steerId);
        const text = `steer of turn ${t}`;
        add('SteerQueued', { steerId, text, position: 1, queueDepth: 1 });
        add('SteeringDelivered', { steerId, text, position: 1, step, boundary: 'tool_results', requestStep: step + 1, afterToolCallIds: [callId], rendered: renderSteer(text) });
        steerIdsNext = [steerId];
        messages++;
        contentBytes += text.length;
      }
    }
    step++;
    add('ModelRequested', { step, steerIds: steerIdsNext });
    add('ModelResponded', { step, text: `turn ${t} done`, toolCalls: [] });
    add('TurnCompleted', { steps: step, text: `turn ${t} done` });
    messages++;
  }
  return { conversationId, tenantId, turnIds, steerIds, events, messages, contentBytes };
}

/** Appends the events in order, `window` publishes in flight (one connection keeps them in order). */
export async function appendAll(js: JetStreamClient, s: Subjects, events: readonly SteerlineEvent[], window = 256): Promise<number> {
  let last = 0;
  for (let i = 0; i < events.length; i += window) {
    const acks = await Promise.all(
      events.slice(i, i + window).map((event) => {
        const h = headers();
        h.set(EVENT_TYPE_HEADER, event.type);
        return js.publish(s.conversationEvents(event.tenantId, event.conversationId), encodeEvent(event), { msgID: event.id, headers: h, timeout: 60_000 });
      }),
    );
    last = acks.at(-1)!.seq;
  }
  return last;
}

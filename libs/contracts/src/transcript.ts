import type { SteerlineEvent, EventData } from './events';
import type { ToolCall } from './models';

/**
 * The model context, message by message. The engine builds each model request
 * from these and the projector stores the same ones, so the transcript a
 * client reads is, by construction, what the model saw.
 */
export type ChatMessage =
  | { role: 'user'; content: string; turnId: string; steerId?: string }
  | { role: 'assistant'; content: string; turnId: string; step: number; toolCalls?: ToolCall[] }
  | { role: 'tool'; content: string; turnId: string; step: number; toolCallId: string };

/** A steer reaches the model as its own user message, exactly this text. */
export function renderSteer(text: string): string {
  return text;
}

/**
 * How an answer cut by an urgent steer reaches the model next: what it had
 * written, as its own assistant message, marked as cut so that it never reads
 * as a complete answer. Nothing written: no message at all.
 */
export function renderInterrupted(partialText: string): string {
  return `${partialText}\n\n${INTERRUPTED_MARKER}`;
}
export const INTERRUPTED_MARKER = '[interrupted: this answer was cut off here by the user, who sent the message that follows]';

export function renderToolResult(result: EventData<'ToolCallFinished'>): string {
  if (!result.ok) return `Error: ${result.error?.message ?? 'tool failed'}`;
  return typeof result.output === 'string' ? result.output : JSON.stringify(result.output ?? null);
}

/** The messages one event adds to the model context (none for most events). */
export function messagesOf(event: SteerlineEvent): ChatMessage[] {
  switch (event.type) {
    case 'TurnStarted':
      return [{ role: 'user', content: event.data.prompt, turnId: event.turnId }];
    case 'ModelResponded': {
      const { step, text, toolCalls } = event.data;
      return [{ role: 'assistant', content: text, turnId: event.turnId, step, ...(toolCalls.length ? { toolCalls } : {}) }];
    }
    case 'ModelInterrupted':
      return event.data.partialText.trim() ? [{ role: 'assistant', content: renderInterrupted(event.data.partialText), turnId: event.turnId, step: event.data.step }] : [];
    case 'ToolCallFinished':
      return [{ role: 'tool', content: renderToolResult(event.data), turnId: event.turnId, step: event.data.step, toolCallId: event.data.toolCallId }];
    case 'SteeringDelivered':
      return [{ role: 'user', content: event.data.rendered, turnId: event.turnId, steerId: event.data.steerId }];
    default:
      return [];
  }
}

import type { ChatCompletion } from 'openai/resources/chat/completions';
import type { ToolCall, Usage } from '@steerline/contracts';
import type { ModelAnswer } from '../model.provider';

/** The endpoint answered, but not with something the turn can act on; worth another try. */
export class MalformedAnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedAnswerError';
  }
}

/**
 * Reads a chat completion into a model answer. Tool call ids must be unique
 * within the answer (each gets exactly one result); servers that omit them or
 * repeat them get `call_<step>_<n>`, which is what the log and every later
 * request then carry.
 */
export function answerOf(completion: ChatCompletion, step: number): ModelAnswer {
  const message = completion?.choices?.[0]?.message;
  if (!message) throw new MalformedAnswerError('the answer has no message');
  if (message.content != null && typeof message.content !== 'string') throw new MalformedAnswerError('the message content is not text');
  const seen = new Set<string>();
  const toolCalls = (message.tool_calls ?? []).map((call, n): ToolCall => {
    if (call.type !== 'function' || !call.function) throw new MalformedAnswerError(`tool call ${n + 1} is not a function call`);
    const name = call.function.name;
    if (typeof name !== 'string' || name.length === 0) throw new MalformedAnswerError(`tool call ${n + 1} has no function name`);
    const id = typeof call.id === 'string' && call.id.length > 0 && !seen.has(call.id) ? call.id : `call_${step}_${n}`;
    seen.add(id);
    return { id, name, args: argsOf(call.function.arguments, name) };
  });
  return { text: message.content ?? '', toolCalls, ...usageOf(completion.usage) };
}

function argsOf(raw: unknown, name: string): Record<string, unknown> {
  // A tool without parameters: servers send "", "{}" or nothing.
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) return {};
  let parsed: unknown = raw;
  if (typeof raw === 'string') {
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new MalformedAnswerError(`the arguments of the call to ${name} are not valid JSON`);
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new MalformedAnswerError(`the arguments of the call to ${name} are not a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

function usageOf(usage: ChatCompletion['usage']): { usage?: Usage } {
  const input = usage?.prompt_tokens;
  const output = usage?.completion_tokens;
  const count = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0;
  return count(input) && count(output) ? { usage: { inputTokens: input, outputTokens: output } } : {};
}

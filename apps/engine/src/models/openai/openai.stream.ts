import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';

interface CallParts {
  id?: string;
  type?: string;
  name: string;
  arguments: string;
}

/**
 * Reads a streamed chat completion (`stream: true`, usage included) back into
 * the completion it adds up to: the text's pieces joined, each tool call's
 * id, name and argument pieces assembled by its index, the usage of the last
 * chunk. Each text piece is handed to `onText` as it arrives. A stream that
 * ends early throws (the SDK raises on a cut connection), so no partial answer
 * is ever returned.
 */
export async function readCompletionStream(stream: AsyncIterable<ChatCompletionChunk>, onText: (text: string) => void): Promise<ChatCompletion> {
  let content: string | null = null;
  let finish: string | null = null;
  let sawChoice = false;
  const calls: CallParts[] = [];
  let usage: ChatCompletion['usage'];
  let id = '';
  let model = '';
  for await (const chunk of stream) {
    id ||= chunk.id;
    model ||= chunk.model;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    sawChoice = true;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      content = (content ?? '') + delta.content;
      onText(delta.content);
    }
    for (const part of delta.tool_calls ?? []) {
      const at = typeof part.index === 'number' ? part.index : calls.length;
      const call = (calls[at] ??= { name: '', arguments: '' });
      if (part.id) call.id = part.id;
      if (part.type) call.type = part.type;
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  const toolCalls = calls.filter(Boolean).map((c) => ({ id: c.id ?? '', type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));
  return {
    id,
    object: 'chat.completion',
    created: 0,
    model,
    choices: sawChoice
      ? [{ index: 0, logprobs: null, finish_reason: (finish ?? 'stop') as 'stop', message: { role: 'assistant', content, refusal: null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) } }]
      : [],
    usage,
  };
}

import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages/messages';
import type { ToolCall, Usage } from '@steerline/contracts';
import type { ModelAnswer } from '../model.provider';
import { MalformedAnswerError } from '../openai/openai.answer';

type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; json: string; input: unknown };

/**
 * Reads a streamed Messages API answer into a model answer: text blocks
 * joined, each `tool_use` block's id and name with its input assembled from
 * its `input_json_delta` pieces, usage from `message_start` and
 * `message_delta`. Text is handed to `onText` as it arrives. An answer that
 * ends without `message_stop` is a broken stream, and throws.
 */
export async function readMessageStream(stream: AsyncIterable<RawMessageStreamEvent>, step: number, onText: (text: string) => void): Promise<ModelAnswer> {
  const blocks: Block[] = [];
  let input: number | undefined;
  let output: number | undefined;
  let stopped = false;
  for await (const event of stream) {
    if (event.type === 'message_start') {
      input = event.message.usage?.input_tokens ?? input;
      output = event.message.usage?.output_tokens ?? output;
    } else if (event.type === 'content_block_start') {
      const b = event.content_block;
      if (b.type === 'text') {
        blocks[event.index] = { type: 'text', text: b.text ?? '' };
        if (b.text) onText(b.text);
      } else if (b.type === 'tool_use') blocks[event.index] = { type: 'tool_use', id: b.id, name: b.name, json: '', input: b.input };
    } else if (event.type === 'content_block_delta') {
      const b = blocks[event.index];
      if (event.delta.type === 'text_delta' && b?.type === 'text') {
        b.text += event.delta.text;
        onText(event.delta.text);
      } else if (event.delta.type === 'input_json_delta' && b?.type === 'tool_use') b.json += event.delta.partial_json;
    } else if (event.type === 'message_delta') {
      output = event.usage?.output_tokens ?? output;
      if (typeof event.usage?.input_tokens === 'number') input = event.usage.input_tokens;
    } else if (event.type === 'message_stop') stopped = true;
  }
  if (!stopped) throw new Error('the stream ended before message_stop');
  const seen = new Set<string>();
  const toolCalls = blocks
    .filter((b): b is Extract<Block, { type: 'tool_use' }> => b?.type === 'tool_use')
    .map((b, n): ToolCall => {
      const id = b.id && !seen.has(b.id) ? b.id : `call_${step}_${n}`;
      seen.add(id);
      return { id, name: b.name, args: argsOf(b) };
    });
  const text = blocks.map((b) => (b?.type === 'text' ? b.text : '')).join('');
  const usage: Usage | undefined = input !== undefined && output !== undefined ? { inputTokens: input, outputTokens: output } : undefined;
  return { text, toolCalls, ...(usage ? { usage } : {}) };
}

function argsOf(b: Extract<Block, { type: 'tool_use' }>): Record<string, unknown> {
  if (!b.name) throw new MalformedAnswerError('a tool_use block has no name');
  let parsed: unknown = b.input ?? {};
  if (b.json.trim() !== '') {
    try {
      parsed = JSON.parse(b.json);
    } catch {
      throw new MalformedAnswerError(`the input of the call to ${b.name} is not valid JSON`);
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new MalformedAnswerError(`the input of the call to ${b.name} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

import type { MessageCreateParamsStreaming, MessageParam, TextBlockParam, Tool, ToolChoice, ToolResultBlockParam, ToolUseBlockParam } from '@anthropic-ai/sdk/resources/messages/messages';
import type { ChatMessage, ModelSettings } from '@steerline/contracts';
import type { ModelRequest, ToolSpec } from '../model.provider';
import { UNFINISHED_TOOL_RESULT } from '../openai/openai.messages';

type Block = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam;

/**
 * The model context as Messages API turns. The API wants user and assistant
 * turns to alternate and every `tool_use` answered by a `tool_result` in the
 * next user turn, so consecutive context messages of one side are merged into
 * one turn of blocks, in order: a delivered steer becomes its own text block
 * after the tool results, never inside one (docs/design.md §3), exactly where the
 * openai provider puts its own user message. A call whose turn ended before it
 * finished gets an error result, as for openai.
 */
export function toAnthropicMessages(context: readonly ChatMessage[]): MessageParam[] {
  const out: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const add = (role: 'user' | 'assistant', blocks: Block[]) => {
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (let i = 0; i < context.length; i++) {
    const m = context[i];
    if (m.role === 'user') add('user', [{ type: 'text', text: m.content }]);
    else if (m.role === 'tool') add('user', [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content }]);
    else {
      const calls = m.toolCalls ?? [];
      const text: Block[] = m.content === '' ? [] : [{ type: 'text', text: m.content }];
      add('assistant', [...text, ...calls.map((c): Block => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args }))]);
      if (calls.length === 0) continue;
      const answered = new Set<string>();
      const results: Block[] = [];
      while (context[i + 1]?.role === 'tool') {
        const result = context[++i] as Extract<ChatMessage, { role: 'tool' }>;
        answered.add(result.toolCallId);
        results.push({ type: 'tool_result', tool_use_id: result.toolCallId, content: result.content });
      }
      for (const call of calls) if (!answered.has(call.id)) results.push({ type: 'tool_result', tool_use_id: call.id, content: UNFINISHED_TOOL_RESULT, is_error: true });
      add('user', results);
    }
  }
  // An assistant turn may not be empty.
  return out.filter((t) => t.content.length > 0);
}

export function toAnthropicTools(specs: readonly ToolSpec[]): Tool[] {
  return specs.map((t) => ({ name: t.name, description: t.description, input_schema: { type: 'object', ...t.parameters } as Tool['input_schema'] }));
}

/**
 * A turn's agent on the Messages API: `system`, its settings under the API's
 * names (maxOutputTokens as `max_tokens`, else the endpoint's bound, as the
 * API requires one; `stop` as `stop_sequences`), and only its allowed tools.
 * `seed` has no Messages API field and is not sent. `parallelToolCalls:
 * false` is the tool choice's `disable_parallel_tool_use`; like the choice
 * itself it goes only with tools.
 */
export function toAnthropicRequest(request: ModelRequest, maxTokens: number): Omit<MessageCreateParamsStreaming, 'model' | 'stream'> {
  const { instructions, settings = {}, tools } = request;
  const choice = tools.length ? toAnthropicToolChoice(settings) : undefined;
  return {
    max_tokens: settings.maxOutputTokens ?? maxTokens,
    ...(instructions !== undefined && { system: instructions }),
    messages: toAnthropicMessages(request.messages),
    ...(tools.length ? { tools: toAnthropicTools(tools) } : {}),
    ...(choice && { tool_choice: choice }),
    ...(settings.temperature !== undefined && { temperature: settings.temperature }),
    ...(settings.topP !== undefined && { top_p: settings.topP }),
    ...(settings.stop !== undefined && { stop_sequences: settings.stop }),
  };
}

function toAnthropicToolChoice(settings: ModelSettings): ToolChoice | undefined {
  const { toolChoice, parallelToolCalls } = settings;
  if (toolChoice === 'none') return { type: 'none' };
  const single = parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  if (toolChoice === 'required') return { type: 'any', ...single };
  if (typeof toolChoice === 'object') return { type: 'tool', name: toolChoice.name, ...single };
  if (toolChoice === 'auto' || parallelToolCalls !== undefined) return { type: 'auto', ...single };
  return undefined;
}

import type { MessageParam, TextBlockParam, Tool, ToolResultBlockParam, ToolUseBlockParam } from '@anthropic-ai/sdk/resources/messages/messages';
import type { ChatMessage } from '@steerline/contracts';
import type { ToolSpec } from '../model.provider';
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

import type {
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { ChatMessage, ModelSettings } from '@steerline/contracts';
import type { ModelRequest, ToolSpec } from '../model.provider';
import type { MaxTokensParam } from '../model.endpoints';

/** The result sent for a call whose turn ended (cancelled, failed, engine lost) before it finished. */
export const UNFINISHED_TOOL_RESULT = 'Error: this tool call did not finish (its turn ended before a result was recorded)';

/**
 * The model context as chat-completions messages. One context message becomes
 * one API message, so a delivered steer stays its own `user` message after the
 * tool results, never merged into a tool's output (docs/design.md §3).
 *
 * The API refuses an assistant message with tool calls that is not followed by
 * a `tool` message for every call. A turn that ended mid-call leaves such a gap
 * in the conversation for good, so every later request fills it with an error
 * result right after the results that do exist.
 */
export function toOpenAIMessages(context: readonly ChatMessage[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  for (let i = 0; i < context.length; i++) {
    const m = context[i];
    if (m.role === 'user') {
      out.push({ role: 'user', content: m.content });
    } else if (m.role === 'tool') {
      out.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content });
    } else if (!m.toolCalls?.length) {
      out.push({ role: 'assistant', content: m.content });
    } else {
      const toolCalls = m.toolCalls.map(
        (c): ChatCompletionMessageFunctionToolCall => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } }),
      );
      // The spec allows null content next to tool calls; an empty string trips some servers' templates.
      out.push({ role: 'assistant', content: m.content === '' ? null : m.content, tool_calls: toolCalls });
      const answered = new Set<string>();
      while (context[i + 1]?.role === 'tool') {
        const result = context[++i] as Extract<ChatMessage, { role: 'tool' }>;
        answered.add(result.toolCallId);
        out.push({ role: 'tool', tool_call_id: result.toolCallId, content: result.content });
      }
      for (const call of m.toolCalls) {
        if (!answered.has(call.id)) out.push({ role: 'tool', tool_call_id: call.id, content: UNFINISHED_TOOL_RESULT });
      }
    }
  }
  return out;
}

export function toOpenAITools(specs: readonly ToolSpec[]): ChatCompletionFunctionTool[] {
  return specs.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

/**
 * A turn's agent on the chat-completions wire: its instructions as the first,
 * `system`, message; its settings under the API's names; only its allowed
 * tools. `tool_choice` and `parallel_tool_calls` go only with a non-empty
 * `tools`, as the API refuses them alone; a turn whose allow-list leaves no
 * tool offers none, which already means none can be called.
 */
export function toOpenAIRequest(request: ModelRequest, maxTokensParam: MaxTokensParam = 'max_tokens'): Omit<ChatCompletionCreateParamsStreaming, 'model' | 'stream'> {
  const { instructions, settings = {}, tools } = request;
  const messages = toOpenAIMessages(request.messages);
  return {
    messages: instructions === undefined ? messages : [{ role: 'system', content: instructions }, ...messages],
    ...(tools.length ? { tools: toOpenAITools(tools), ...toolSettings(settings) } : {}),
    ...(settings.temperature !== undefined && { temperature: settings.temperature }),
    ...(settings.topP !== undefined && { top_p: settings.topP }),
    ...(settings.maxOutputTokens !== undefined && { [maxTokensParam]: settings.maxOutputTokens }),
    ...(settings.stop !== undefined && { stop: settings.stop }),
    ...(settings.seed !== undefined && { seed: settings.seed }),
  };
}

function toolSettings(settings: ModelSettings): Pick<ChatCompletionCreateParamsStreaming, 'tool_choice' | 'parallel_tool_calls'> {
  const choice = settings.toolChoice;
  return {
    ...(choice !== undefined && { tool_choice: typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } } }),
    ...(settings.parallelToolCalls !== undefined && { parallel_tool_calls: settings.parallelToolCalls }),
  };
}

import type { ChatMessage } from '@steerline/contracts';
import { UNFINISHED_TOOL_RESULT, toOpenAIMessages, toOpenAITools } from './openai.messages';

const turnId = '0190a000-0000-7000-8000-000000000001';
const call = (id: string, name = 'sleep') => ({ id, name, args: { ms: 1 } });

describe('the model context as chat-completions messages', () => {
  it('keeps each delivered steer its own user message after the tool results, never inside one', () => {
    const context: ChatMessage[] = [
      { role: 'user', content: 'go', turnId },
      { role: 'assistant', content: '', turnId, step: 1, toolCalls: [call('a'), call('b')] },
      { role: 'tool', content: 'slept 1 ms', turnId, step: 1, toolCallId: 'b' },
      { role: 'tool', content: 'slept 1 ms', turnId, step: 1, toolCallId: 'a' },
      { role: 'user', content: 'left', turnId, steerId: '0190a000-0000-7000-8000-000000000002' },
      { role: 'user', content: 'then right', turnId, steerId: '0190a000-0000-7000-8000-000000000003' },
      { role: 'assistant', content: 'ok', turnId, step: 2 },
    ];
    expect(toOpenAIMessages(context)).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'sleep', arguments: '{"ms":1}' } },
          { id: 'b', type: 'function', function: { name: 'sleep', arguments: '{"ms":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'b', content: 'slept 1 ms' },
      { role: 'tool', tool_call_id: 'a', content: 'slept 1 ms' },
      { role: 'user', content: 'left' },
      { role: 'user', content: 'then right' },
      { role: 'assistant', content: 'ok' },
    ]);
  });

  it('answers every call a turn left unfinished with an error result, right after the results that exist', () => {
    const context: ChatMessage[] = [
      { role: 'user', content: 'go', turnId },
      { role: 'assistant', content: 'working', turnId, step: 1, toolCalls: [call('a'), call('b'), call('c')] },
      { role: 'tool', content: 'slept 1 ms', turnId, step: 1, toolCallId: 'b' },
      { role: 'user', content: 'next turn', turnId: '0190a000-0000-7000-8000-000000000009' },
    ];
    const roles = toOpenAIMessages(context).map((m) => [m.role, 'tool_call_id' in m ? m.tool_call_id : null, m.content]);
    expect(roles).toEqual([
      ['user', null, 'go'],
      ['assistant', null, 'working'],
      ['tool', 'b', 'slept 1 ms'],
      ['tool', 'a', UNFINISHED_TOOL_RESULT],
      ['tool', 'c', UNFINISHED_TOOL_RESULT],
      ['user', null, 'next turn'],
    ]);
  });

  it('answers the calls of a context that ends with them (the turn was cut off at the last message)', () => {
    const context: ChatMessage[] = [{ role: 'assistant', content: '', turnId, step: 1, toolCalls: [call('a')] }];
    expect(toOpenAIMessages(context).at(-1)).toEqual({ role: 'tool', tool_call_id: 'a', content: UNFINISHED_TOOL_RESULT });
  });

  it('offers tools as functions with their JSON Schemas', () => {
    const parameters = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };
    expect(toOpenAITools([{ name: 'search', description: 'Searches.', parameters }])).toEqual([
      { type: 'function', function: { name: 'search', description: 'Searches.', parameters } },
    ]);
  });
});

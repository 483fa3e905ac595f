import type { ChatCompletion } from 'openai/resources/chat/completions';
import { MalformedAnswerError, answerOf } from './openai.answer';

const completion = (message: Record<string, unknown>, usage?: Record<string, number>) =>
  ({ id: 'x', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }], usage }) as unknown as ChatCompletion;
const fn = (name: string, args: string | undefined, id?: string) => ({ ...(id !== undefined ? { id } : {}), type: 'function', function: { name, arguments: args } });

describe('reading a chat completion into a model answer', () => {
  it('reads text, tool calls with parsed arguments, and usage', () => {
    const answer = answerOf(completion({ content: 'hi', tool_calls: [fn('echo', '{"text":"a"}', 'c1')] }, { prompt_tokens: 10, completion_tokens: 2 }), 1);
    expect(answer).toEqual({ text: 'hi', toolCalls: [{ id: 'c1', name: 'echo', args: { text: 'a' } }], usage: { inputTokens: 10, outputTokens: 2 } });
  });

  it('gives calls without an id, or with a repeated one, an id of their own so each gets exactly one result', () => {
    const answer = answerOf(completion({ content: null, tool_calls: [fn('a', '{}', 'same'), fn('b', '{}', 'same'), fn('c', '{}')] }), 4);
    expect(answer.toolCalls.map((c) => c.id)).toEqual(['same', 'call_4_1', 'call_4_2']);
    expect(answer.text).toBe('');
    expect(answer.usage).toBeUndefined();
  });

  it('reads missing or empty arguments as no arguments', () => {
    const answer = answerOf(completion({ tool_calls: [fn('a', ''), fn('b', undefined)] }), 1);
    expect(answer.toolCalls.map((c) => c.args)).toEqual([{}, {}]);
  });

  it.each([
    ['arguments that are not JSON', completion({ tool_calls: [fn('a', '{"x": ')] })],
    ['arguments that are not an object', completion({ tool_calls: [fn('a', '[1,2]')] })],
    ['a call without a function name', completion({ tool_calls: [fn('', '{}')] })],
    ['an answer without choices', { choices: [] } as unknown as ChatCompletion],
  ])('refuses %s as malformed (worth another attempt)', (_what, c) => {
    expect(() => answerOf(c, 1)).toThrow(MalformedAnswerError);
  });
});

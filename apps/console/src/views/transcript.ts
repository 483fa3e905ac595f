import { h, type VNode } from 'preact';
import type { ConversationView } from '@steerline/client';

/** The conversation as the model saw it: exactly its context, in order (delivered steers included). */
export function Transcript({ view }: { view: ConversationView | undefined }): VNode<any> {
  if (!view) return h('p', null, 'Loading the transcript…');
  if (view.messages.length === 0) return h('p', null, 'No messages yet.');
  return h(
    'ol',
    { class: 'transcript' },
    view.messages.map((m, i) => {
      const who = m.role === 'user' ? (m.steerId ? 'steer' : 'prompt') : m.role === 'tool' ? `tool result (step ${m.step})` : `assistant (step ${m.step})`;
      const calls = m.role === 'assistant' && m.toolCalls?.length ? m.toolCalls.map((c) => `${c.name}(${JSON.stringify(c.args)})`).join(', ') : '';
      return h(
        'li',
        { key: i, class: `message message-${m.role}${m.role === 'user' && m.steerId ? ' message-steer' : ''}`, 'data-role': m.role === 'user' && m.steerId ? 'steer' : m.role },
        h('span', { class: 'label' }, `${who}: `),
        m.content,
        calls && h('span', { class: 'calls' }, ` calls ${calls}`),
      );
    }),
  );
}

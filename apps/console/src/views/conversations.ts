import { h, type VNode } from 'preact';
import type { ConversationSummary } from '@steerline/client';
import { short } from './timeline-view';

export interface ConversationListProps {
  conversations: ConversationSummary[];
  selected: string | undefined;
  hasMore: boolean;
  onSelect(id: string): void;
  onNew(): void;
  onMore(): void;
}

/** The tenant's conversations, newest first; each is a button, so the list works from the keyboard. */
export function ConversationListPage(p: ConversationListProps): VNode<any> {
  return h(
    'nav',
    { 'aria-label': 'Conversations', class: 'conversations' },
    h('h2', null, 'Conversations'),
    h('button', { type: 'button', onClick: p.onNew }, 'New conversation'),
    h(
      'ul',
      null,
      p.conversations.map((c) =>
        h(
          'li',
          { key: c.id },
          h(
            'button',
            { type: 'button', class: 'conversation', 'aria-current': c.id === p.selected ? 'true' : undefined, 'data-conversation': c.id, onClick: () => p.onSelect(c.id) },
            h('span', { class: 'title' }, c.lastTurn?.prompt || `Conversation ${short(c.id)}`),
            h('span', { class: 'meta' }, `${new Date(c.createdAt).toLocaleString()} · ${c.lastTurn?.status ?? 'no turns'}`),
          ),
        ),
      ),
    ),
    p.hasMore && h('button', { type: 'button', onClick: p.onMore }, 'Older conversations'),
  );
}

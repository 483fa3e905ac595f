import type { EntityManager } from 'typeorm';
import {
  CONVERSATION_PAGE_HEADER,
  CONVERSATION_PAGE_ITEMS,
  CONVERSATION_SECTIONS,
  type ConversationCursor,
  type ConversationPageLayout,
  type ConversationQuery,
  type ConversationSection,
} from '@steerline/contracts';
import { EncodedReply } from '@steerline/runtime';
import type { ConversationEntity } from '../read-models/entities';
import { SteerEntity, TurnEntity, type MessageEntity } from '../read-models/entities';
import { toChatMessage, toSteerView, toTurnView } from '../read-models/views';

/**
 * One page of a conversation read, its items already encoded: each item's JSON is made once, to
 * measure it against the budget and to send it (`encoded`).
 */
export interface EncodedPage {
  id: string;
  createdAt: string;
  next?: ConversationCursor;
  /** Each section's items as JSON text, in order. */
  items: Record<ConversationSection, string[]>;
}

/**
 * Builds one page of a conversation read (docs/design.md §14, `qry.conversation`): the
 * sections in order from the query's cursor, each item measured as the JSON it
 * will be, until the next would pass `budgetBytes`. A page holds at least one
 * item, so a read always advances; an item alone over the budget makes that
 * page's reply too large, which the responder answers as `payload_too_large`.
 */
export async function conversationPage(db: EntityManager, conversation: ConversationEntity, q: ConversationQuery, budgetBytes: number): Promise<EncodedPage> {
  const page: EncodedPage = { id: conversation.id, createdAt: conversation.createdAt.toISOString(), items: { turns: [], messages: [], steers: [] } };
  let used = Buffer.byteLength(JSON.stringify({ ...page, items: undefined, turns: [], messages: [], steers: [] })) + 64; // + the `next` cursor
  let items = 0;
  const from = q.from ?? { section: 'turns', offset: 0 };
  const firstMessage = q.afterMessage ?? 0;
  // Ordinals count from 0, so `afterMessage` is the number of messages the caller already has.
  const endMessage = q.limit !== undefined ? firstMessage + q.limit : undefined;
  for (const section of CONVERSATION_SECTIONS.slice(CONVERSATION_SECTIONS.indexOf(from.section))) {
    let offset = section === from.section ? from.offset : section === 'messages' ? firstMessage : 0;
    if (section === 'messages') offset = Math.max(offset, firstMessage);
    const rows = await readSection(db, section, conversation.id, offset, endMessage);
    for (const item of rows) {
      const json = JSON.stringify(item);
      const bytes = Buffer.byteLength(json) + 1;
      if (items > 0 && used + bytes > budgetBytes) return { ...page, next: { section, offset } };
      page.items[section].push(json);
      used += bytes;
      items++;
      offset++;
    }
    // A full read may have left more behind: the next page looks (and may find none).
    if (rows.length === CONVERSATION_PAGE_ITEMS) return { ...page, next: { section, offset } };
  }
  return page;
}

/**
 * The page as its reply: the ConversationPage JSON, written from the items' JSON without
 * encoding them again, and the CONVERSATION_PAGE_HEADER saying where each section's items lie.
 */
export function encodePage(page: EncodedPage): EncodedReply {
  let text = `{"id":${JSON.stringify(page.id)},"createdAt":${JSON.stringify(page.createdAt)}`;
  let bytes = Buffer.byteLength(text);
  const sections: ConversationPageLayout['sections'] = {};
  for (const section of CONVERSATION_SECTIONS) {
    const open = `,"${section}":[`;
    text += open;
    bytes += open.length;
    const items = page.items[section];
    if (items.length) {
      const joined = items.join(',');
      const length = Buffer.byteLength(joined);
      sections[section] = [bytes, bytes + length];
      text += joined;
      bytes += length;
    }
    text += ']';
    bytes += 1;
  }
  text += page.next ? `,"next":${JSON.stringify(page.next)}}` : '}';
  const layout: ConversationPageLayout = { id: page.id, createdAt: page.createdAt, ...(page.next && { next: page.next }), sections };
  return new EncodedReply(text, (offset) => ({ [CONVERSATION_PAGE_HEADER]: JSON.stringify(shifted(layout, offset)) }));
}

function shifted(layout: ConversationPageLayout, by: number): ConversationPageLayout {
  const sections: ConversationPageLayout['sections'] = {};
  for (const [section, [start, end]] of Object.entries(layout.sections) as [ConversationSection, [number, number]][]) sections[section] = [start + by, end + by];
  return { ...layout, sections };
}

/** What toChatMessage reads of a message row. */
type MessageRow = Pick<MessageEntity, 'role' | 'content' | 'turnId' | 'step' | 'steerId' | 'toolCallId' | 'toolCalls'>;

/** Up to CONVERSATION_PAGE_ITEMS items of one section from `offset`, as views, in the order the view promises. */
async function readSection(db: EntityManager, section: ConversationSection, conversationId: string, offset: number, endMessage?: number) {
  const take = CONVERSATION_PAGE_ITEMS;
  switch (section) {
    case 'turns': {
      const turns = await db.find(TurnEntity, { where: { conversationId }, order: { startedAt: 'ASC', id: 'ASC' }, skip: offset, take });
      return turns.map(toTurnView);
    }
    case 'messages': {
      if (endMessage !== undefined && offset >= endMessage) return [];
      // Plain rows in the entity's shape (the generation's schema is on the search path): a page is ~500 of them, and building entities cost more than reading them.
      const messages: MessageRow[] = await db.query(
        `SELECT role, content, turn_id AS "turnId", step, steer_id AS "steerId", tool_call_id AS "toolCallId", tool_calls AS "toolCalls"
         FROM messages WHERE conversation_id = $1 AND ordinal >= $2 AND ordinal < $3 ORDER BY ordinal LIMIT $4`,
        [conversationId, offset, endMessage ?? 2 ** 31 - 1, take],
      );
      return messages.map(toChatMessage);
    }
    case 'steers': {
      // In turn order, then queue position; a steer whose turn row is missing comes last.
      const steers = await db
        .createQueryBuilder(SteerEntity, 's')
        .leftJoin(TurnEntity, 't', 't.id = s.turn_id')
        .where('s.conversation_id = :conversationId', { conversationId })
        .orderBy('t.started_at', 'ASC', 'NULLS LAST')
        .addOrderBy('t.id', 'ASC', 'NULLS LAST')
        .addOrderBy('s.turn_id', 'ASC')
        .addOrderBy('s.position', 'ASC')
        .offset(offset)
        .limit(take)
        .getMany();
      return steers.map(toSteerView);
    }
  }
}

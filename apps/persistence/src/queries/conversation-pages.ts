import { Between, MoreThanOrEqual, type EntityManager } from 'typeorm';
import {
  CONVERSATION_PAGE_ITEMS,
  CONVERSATION_SECTIONS,
  type ConversationPage,
  type ConversationQuery,
  type ConversationSection,
} from '@steerline/contracts';
import type { ConversationEntity } from '../read-models/entities';
import { MessageEntity, SteerEntity, TurnEntity } from '../read-models/entities';
import { toChatMessage, toSteerView, toTurnView } from '../read-models/views';

/**
 * Builds one page of a conversation read (docs/design.md §14, `qry.conversation`): the
 * sections in order from the query's cursor, each item measured as the JSON it
 * will be, until the next would pass `budgetBytes`. A page holds at least one
 * item, so a read always advances; an item alone over the budget makes that
 * page's reply too large, which the responder answers as `payload_too_large`.
 */
export async function conversationPage(db: EntityManager, conversation: ConversationEntity, q: ConversationQuery, budgetBytes: number): Promise<ConversationPage> {
  const page: ConversationPage = { id: conversation.id, createdAt: conversation.createdAt.toISOString(), turns: [], messages: [], steers: [] };
  let used = Buffer.byteLength(JSON.stringify(page)) + 64; // + the `next` cursor
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
      const bytes = Buffer.byteLength(JSON.stringify(item)) + 1;
      if (items > 0 && used + bytes > budgetBytes) return { ...page, next: { section, offset } };
      (page[section] as unknown[]).push(item);
      used += bytes;
      items++;
      offset++;
    }
    // A full read may have left more behind: the next page looks (and may find none).
    if (rows.length === CONVERSATION_PAGE_ITEMS) return { ...page, next: { section, offset } };
  }
  return page;
}

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
      const ordinal = endMessage !== undefined ? Between(offset, endMessage - 1) : MoreThanOrEqual(offset);
      const messages = await db.find(MessageEntity, { where: { conversationId, ordinal }, order: { ordinal: 'ASC' }, take });
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

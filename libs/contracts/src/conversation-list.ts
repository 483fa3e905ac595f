import { z } from 'zod';
import { TURN_STATUSES, type TurnStatus } from './commands';

/**
 * The tenant's conversations, newest first, a page at a time (`qry.conversations`,
 * `GET /v1/conversations`). Paging is by keyset, not offset: the cursor names
 * the last conversation of the previous page, so conversations created while
 * a client pages never shift a page or show up twice.
 */
export const CONVERSATIONS_PAGE_DEFAULT = 20;
export const CONVERSATIONS_PAGE_MAX = 100;

// `<createdAt as epoch microseconds>_<id>`: the sort key itself, so a page is one index range.
const CURSOR = /^(\d{1,17})_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export const ConversationsQuery = z
  .object({
    tenantId: z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/),
    limit: z.number().int().min(1).max(CONVERSATIONS_PAGE_MAX).optional(),
    before: z.string().regex(CURSOR, 'must be a cursor from a previous page’s `next`').optional(),
  })
  .strict();
export type ConversationsQuery = z.infer<typeof ConversationsQuery>;

/** One line of the list: enough to pick a conversation without reading its transcript. */
export interface ConversationSummary {
  id: string;
  createdAt: string;
  messageCount: number;
  /** The conversation's latest turn, if it has one. */
  lastTurn?: { id: string; status: TurnStatus; prompt: string; startedAt: string };
}

export interface ConversationListPage {
  conversations: ConversationSummary[];
  /** Pass as `before` for the next (older) page; absent on the last page. */
  next?: string;
}

export function conversationCursor(createdAtMicros: bigint | number | string, id: string): string {
  return `${String(createdAtMicros)}_${id}`;
}

export function parseConversationCursor(cursor: string): { createdAtMicros: string; id: string } {
  const m = CURSOR.exec(cursor);
  if (!m) throw new Error(`not a conversation cursor: ${cursor}`);
  return { createdAtMicros: m[1], id: m[2] };
}

const at = z.iso.datetime();
export const ConversationListPageSchema = z.object({
  conversations: z.array(
    z.object({
      id: z.uuid(),
      createdAt: at,
      messageCount: z.number().int().nonnegative(),
      lastTurn: z.object({ id: z.uuid(), status: z.enum(TURN_STATUSES), prompt: z.string(), startedAt: at }).optional(),
    }),
  ),
  next: z.string().optional(),
});
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const drift: Same<z.infer<typeof ConversationListPageSchema>, ConversationListPage> = true;
void drift;

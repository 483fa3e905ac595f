import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import {
  CONVERSATIONS_PAGE_DEFAULT,
  conversationCursor,
  parseConversationCursor,
  type ConversationListPage,
  type ConversationsQuery,
  type TurnStatus,
} from '@steerline/contracts';
import { activeGeneration } from '../read-models/generations';

/** How much of the last turn's prompt a list line carries: a title, not the prompt. */
export const SUMMARY_PROMPT_CHARS = 200;

interface Row {
  id: string;
  created_at: Date;
  micros: string;
  message_count: number;
  turn_id: string | null;
  status: TurnStatus | null;
  prompt: string | null;
  started_at: Date | null;
}

/**
 * `qry.conversations`: a tenant's conversations, newest first. Keyset paging on
 * (created_at, id): the cursor is the last row's key, in whole microseconds
 * (PostgreSQL's own precision), so no row is skipped or repeated between pages.
 */
@Injectable()
export class ConversationList {
  constructor(private readonly dataSource: DataSource) {}

  page(q: ConversationsQuery): Promise<ConversationListPage> {
    const limit = q.limit ?? CONVERSATIONS_PAGE_DEFAULT;
    const before = q.before === undefined ? undefined : parseConversationCursor(q.before);
    return this.dataSource.transaction('REPEATABLE READ', async (db) => {
      await activeGeneration(db);
      // One row more than asked for says whether there is a next page.
      const rows: Row[] = await db.query(
        `SELECT c.id, c.created_at, c.message_count,
                (extract(epoch FROM c.created_at) * 1000000)::bigint::text AS micros,
                t.id AS turn_id, t.status, left(t.prompt, ${SUMMARY_PROMPT_CHARS}) AS prompt, t.started_at
           FROM conversations c
           LEFT JOIN LATERAL (
             SELECT id, status, prompt, started_at FROM turns
              WHERE conversation_id = c.id ORDER BY started_at DESC, id DESC LIMIT 1
           ) t ON true
          WHERE c.tenant_id = $1
            AND ($2::bigint IS NULL OR (c.created_at, c.id) < ('epoch'::timestamptz + $2::bigint * interval '1 microsecond', $3::uuid))
          ORDER BY c.created_at DESC, c.id DESC
          LIMIT $4`,
        [q.tenantId, before?.createdAtMicros ?? null, before?.id ?? null, limit + 1],
      );
      const shown = rows.slice(0, limit);
      const last = shown.at(-1);
      return {
        conversations: shown.map((r) => ({
          id: r.id,
          createdAt: r.created_at.toISOString(),
          messageCount: r.message_count,
          ...(r.turn_id && {
            lastTurn: { id: r.turn_id, status: r.status as TurnStatus, prompt: r.prompt ?? '', startedAt: (r.started_at as Date).toISOString() },
          }),
        })),
        ...(rows.length > limit && last && { next: conversationCursor(last.micros, last.id) }),
      };
    });
  }
}

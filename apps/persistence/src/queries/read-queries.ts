import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import {
  SteerlineError,
  type ConversationCursor,
  type ConversationQuery,
  type Receipt,
  type SteerQuery,
  type TurnQuery,
  type TurnView,
} from '@steerline/contracts';
import { ConversationEntity, SteerEntity, TurnEntity } from '../read-models/entities';
import { activeGeneration } from '../read-models/generations';
import { partitionNames } from '../projector/partitions';
import { countTroubles, readCheckpoints } from '../read-models/store';
import { toReceipt, toTurnView } from '../read-models/views';
import { conversationPage, encodePage } from './conversation-pages';
import type { EncodedReply } from '@steerline/runtime';
import { PagesAhead } from './pages-ahead';
import { PersistenceMetrics } from '../observability/persistence-metrics';

/** What the read side says about itself: for `/readyz`, metrics and operators. */
export interface ReadSideStats {
  /** The read-model generation queries answer from. */
  generation: number;
  /** Each of its partitions' checkpoints, in partition order (their lowest is what a layout reading the whole log reflects; coveredThrough). */
  checkpoints: number[];
  /** Messages the projector could not apply, kept with their raw payloads. */
  deadLetters: number;
  /** Conversations that stopped advancing at a per-turn seq gap. */
  stalledConversations: number;
}

/**
 * Reads of the read models. Every lookup is scoped by tenant: a row of another
 * tenant is reported exactly like a missing one, so ids cannot be probed.
 * Each answer is one snapshot; a conversation read in several pages is one
 * snapshot per page (messages and steers only grow at the end, so the pages
 * still join up without gaps or repeats).
 */
@Injectable()
export class ReadQueries {
  /** The next pages of reads asked of this instance (`queryConversationAt`), read ahead. */
  readonly ahead = new PagesAhead<{ reply: EncodedReply; next?: ConversationCursor }>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly metrics: PersistenceMetrics,
  ) {}

  /**
   * One page of a conversation, at most `budgetBytes` of JSON (see `conversationPage`), encoded as its
   * reply (`encodePage`). With `readAhead` (the read asks its next page of this instance), the page
   * after it is started at once, and the next request is answered from it.
   */
  async conversation(q: ConversationQuery, budgetBytes: number, readAhead = false): Promise<EncodedReply> {
    const ahead = readAhead ? this.ahead.take(pageKey(q, budgetBytes)) : undefined;
    // Counted from a read's second page on: nothing is ever read ahead for a first page.
    if (readAhead && q.from) this.metrics.pagesAt.inc({ read_ahead: ahead ? 'yes' : 'no' });
    const { reply, next } = ahead ? await ahead.catch(() => this.page(q, budgetBytes)) : await this.page(q, budgetBytes);
    if (readAhead && next) {
      const following: ConversationQuery = { ...q, from: next };
      this.ahead.put(pageKey(following, budgetBytes), () => this.page(following, budgetBytes));
    }
    return reply;
  }

  private async page(q: ConversationQuery, budgetBytes: number): Promise<{ reply: EncodedReply; next?: ConversationCursor }> {
    const page = await this.read(async (db) => {
      const conversation = await db.findOneBy(ConversationEntity, { id: q.conversationId, tenantId: q.tenantId });
      if (!conversation) throw new SteerlineError('not_found', `conversation ${q.conversationId} not found`, { conversationId: q.conversationId });
      return conversationPage(db, conversation, q, budgetBytes);
    });
    return { reply: encodePage(page), next: page.next };
  }

  async turn(q: TurnQuery): Promise<TurnView> {
    const turn = await this.read((db) => db.findOneBy(TurnEntity, { id: q.turnId, tenantId: q.tenantId }));
    if (!turn) throw new SteerlineError('not_found', `turn ${q.turnId} not found`, { turnId: q.turnId });
    return toTurnView(turn);
  }

  async steer(q: SteerQuery): Promise<Receipt> {
    const steer = await this.read((db) => db.findOneBy(SteerEntity, { id: q.steerId, turnId: q.turnId, tenantId: q.tenantId }));
    if (!steer) throw new SteerlineError('not_found', `steer ${q.steerId} of turn ${q.turnId} not found`, { steerId: q.steerId, turnId: q.turnId });
    return toReceipt(steer);
  }

  /**
   * The active generation's checkpoint (the lowest of its partitions': every
   * event up to it is applied, whichever partition owns it) and counters, or
   * null when the database does not answer.
   */
  async stats(checkpointName: string): Promise<ReadSideStats | null> {
    return this.dataSource
      .transaction('REPEATABLE READ', async (db) => {
        const generation = await activeGeneration(db);
        const checkpoints = await readCheckpoints(db, partitionNames(checkpointName, generation.partitions));
        return { generation: generation.id, checkpoints, ...(await countTroubles(db)) };
      })
      .catch(() => null);
  }

  /**
   * One snapshot of the active generation: a conversation's turns, messages
   * and steers come from the same committed batches, and a rebuild's switch
   * never shows half of one generation and half of the other.
   */
  private read<T>(fn: (db: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction('REPEATABLE READ', async (db) => {
      await activeGeneration(db);
      return fn(db);
    });
  }
}

/** A page request's identity: the same query from the same cursor, with the same budget. */
function pageKey(q: ConversationQuery, budgetBytes: number): string {
  return JSON.stringify([q.tenantId, q.conversationId, q.afterMessage ?? null, q.limit ?? null, q.from?.section ?? 'turns', q.from?.offset ?? 0, budgetBytes]);
}

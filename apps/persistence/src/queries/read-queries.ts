import { Injectable } from '@nestjs/common';
import { DataSource, MoreThanOrEqual, type EntityManager } from 'typeorm';
import {
  SteerlineError,
  type ConversationQuery,
  type ConversationView,
  type Receipt,
  type SteerQuery,
  type TurnQuery,
  type TurnView,
} from '@steerline/contracts';
import { ConversationEntity, MessageEntity, SteerEntity, TurnEntity } from '../read-models/entities';
import { activeGeneration } from '../read-models/generations';
import { countTroubles, readCheckpoint } from '../read-models/store';
import { toChatMessage, toReceipt, toSteerView, toTurnView } from '../read-models/views';

/** What the read side says about itself: for `/readyz`, metrics and operators. */
export interface ReadSideStats {
  /** The read-model generation queries answer from. */
  generation: number;
  /** The stream sequence that generation reflects. */
  checkpoint: number;
  /** Messages the projector could not apply, kept with their raw payloads. */
  deadLetters: number;
  /** Conversations that stopped advancing at a per-turn seq gap. */
  stalledConversations: number;
}

/**
 * Reads of the read models. Every lookup is scoped by tenant: a row of another
 * tenant is reported exactly like a missing one, so ids cannot be probed.
 */
@Injectable()
export class ReadQueries {
  constructor(private readonly dataSource: DataSource) {}

  async conversation(q: ConversationQuery): Promise<ConversationView> {
    return this.read(async (db) => {
      const conversation = await db.findOneBy(ConversationEntity, { id: q.conversationId, tenantId: q.tenantId });
      if (!conversation) throw new SteerlineError('not_found', `conversation ${q.conversationId} not found`, { conversationId: q.conversationId });
      const turns = await db.find(TurnEntity, { where: { conversationId: conversation.id }, order: { startedAt: 'ASC', id: 'ASC' } });
      // Ordinals count from 0, so `afterMessage` is the number of messages the caller already has.
      const messages = await db.find(MessageEntity, {
        where: { conversationId: conversation.id, ...(q.afterMessage !== undefined && { ordinal: MoreThanOrEqual(q.afterMessage) }) },
        order: { ordinal: 'ASC' },
        ...(q.limit !== undefined && { take: q.limit }),
      });
      const steers = await db.findBy(SteerEntity, { conversationId: conversation.id });
      const turnOrder = new Map(turns.map((t, i) => [t.id, i]));
      steers.sort((a, b) => (turnOrder.get(a.turnId) ?? turns.length) - (turnOrder.get(b.turnId) ?? turns.length) || a.position - b.position);
      return {
        id: conversation.id,
        createdAt: conversation.createdAt.toISOString(),
        turns: turns.map(toTurnView),
        messages: messages.map(toChatMessage),
        steers: steers.map(toSteerView),
      };
    });
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

  /** The active generation's checkpoint and counters, or null when the database does not answer. */
  async stats(checkpointName: string): Promise<ReadSideStats | null> {
    return this.dataSource
      .transaction('REPEATABLE READ', async (db) => {
        const generation = await activeGeneration(db);
        const checkpoint = await readCheckpoint(db, checkpointName);
        return { generation: generation.id, checkpoint, ...(await countTroubles(db)) };
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

import { Injectable } from '@nestjs/common';
import { DataSource, MoreThanOrEqual } from 'typeorm';
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
import { readCheckpoint } from '../read-models/store';
import { toChatMessage, toReceipt, toSteerView, toTurnView } from '../read-models/views';

/**
 * Reads of the read models. Every lookup is scoped by tenant: a row of another
 * tenant is reported exactly like a missing one, so ids cannot be probed.
 */
@Injectable()
export class ReadQueries {
  constructor(private readonly dataSource: DataSource) {}

  async conversation(q: ConversationQuery): Promise<ConversationView> {
    const db = this.dataSource.manager;
    const conversation = await db.findOneBy(ConversationEntity, { id: q.conversationId, tenantId: q.tenantId });
    if (!conversation) throw new SteerlineError('not_found', `conversation ${q.conversationId} not found`, { conversationId: q.conversationId });
    const [turns, messages, steers] = await Promise.all([
      db.find(TurnEntity, { where: { conversationId: conversation.id }, order: { startedAt: 'ASC', id: 'ASC' } }),
      // Ordinals count from 0, so `afterMessage` is the number of messages the caller already has.
      db.find(MessageEntity, {
        where: { conversationId: conversation.id, ...(q.afterMessage !== undefined && { ordinal: MoreThanOrEqual(q.afterMessage) }) },
        order: { ordinal: 'ASC' },
        ...(q.limit !== undefined && { take: q.limit }),
      }),
      db.findBy(SteerEntity, { conversationId: conversation.id }),
    ]);
    const turnOrder = new Map(turns.map((t, i) => [t.id, i]));
    steers.sort((a, b) => (turnOrder.get(a.turnId) ?? turns.length) - (turnOrder.get(b.turnId) ?? turns.length) || a.position - b.position);
    return {
      id: conversation.id,
      createdAt: conversation.createdAt.toISOString(),
      turns: turns.map(toTurnView),
      messages: messages.map(toChatMessage),
      steers: steers.map(toSteerView),
    };
  }

  async turn(q: TurnQuery): Promise<TurnView> {
    const turn = await this.dataSource.manager.findOneBy(TurnEntity, { id: q.turnId, tenantId: q.tenantId });
    if (!turn) throw new SteerlineError('not_found', `turn ${q.turnId} not found`, { turnId: q.turnId });
    return toTurnView(turn);
  }

  async steer(q: SteerQuery): Promise<Receipt> {
    const steer = await this.dataSource.manager.findOneBy(SteerEntity, { id: q.steerId, turnId: q.turnId, tenantId: q.tenantId });
    if (!steer) throw new SteerlineError('not_found', `steer ${q.steerId} of turn ${q.turnId} not found`, { steerId: q.steerId, turnId: q.turnId });
    return toReceipt(steer);
  }

  /** The stored checkpoint, or null when the database does not answer. */
  async checkpoint(name: string): Promise<number | null> {
    return readCheckpoint(this.dataSource.manager, name).catch(() => null);
  }
}

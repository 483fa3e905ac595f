import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Boundary, DropReason, ModelSpec, PendingApproval, SteerStatus, ToolCall, TurnLimits, TurnStatus } from '@steerline/contracts';

/*
 * TypeORM mappings of the read-model tables, for the queries. The tables are
 * created by `generationDdl` (synchronize is off) in one schema per
 * generation; the names here carry no schema and resolve through the
 * transaction's search_path (see `activeGeneration`).
 */

@Entity({ name: 'conversations' })
export class ConversationEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text', { name: 'tenant_id' }) tenantId!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('int', { name: 'message_count' }) messageCount!: number;
}

@Entity({ name: 'turns' })
export class TurnEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'conversation_id' }) conversationId!: string;
  @Column('text', { name: 'tenant_id' }) tenantId!: string;
  @Column('text') status!: TurnStatus;
  @Column('int') steps!: number;
  @Column('text') prompt!: string;
  @Column('jsonb') model!: ModelSpec;
  @Column('jsonb') limits!: TurnLimits;
  @Column('text', { nullable: true }) text!: string | null;
  @Column('jsonb', { nullable: true }) error!: { code: string; message: string } | null;
  @Column('text', { name: 'cancel_reason', nullable: true }) cancelReason!: string | null;
  @Column('int') resumes!: number;
  @Column('int') queued!: number;
  @Column('int') delivered!: number;
  @Column('int') dropped!: number;
  @Column('jsonb', { name: 'pending_approvals' }) pendingApprovals!: PendingApproval[];
  @Column('timestamptz', { name: 'started_at' }) startedAt!: Date;
  @Column('timestamptz', { name: 'ended_at', nullable: true }) endedAt!: Date | null;
  @Column('int', { name: 'last_event_seq' }) lastEventSeq!: number;
}

@Entity({ name: 'messages' })
export class MessageEntity {
  @PrimaryColumn('uuid', { name: 'conversation_id' }) conversationId!: string;
  @PrimaryColumn('int') ordinal!: number;
  @Column('text') role!: 'user' | 'assistant' | 'tool';
  @Column('text') content!: string;
  @Column('uuid', { name: 'turn_id' }) turnId!: string;
  @Column('int', { nullable: true }) step!: number | null;
  @Column('uuid', { name: 'steer_id', nullable: true }) steerId!: string | null;
  @Column('text', { name: 'tool_call_id', nullable: true }) toolCallId!: string | null;
  @Column('jsonb', { name: 'tool_calls', nullable: true }) toolCalls!: ToolCall[] | null;
}

@Entity({ name: 'steers' })
export class SteerEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'turn_id' }) turnId!: string;
  @Column('uuid', { name: 'conversation_id' }) conversationId!: string;
  @Column('text', { name: 'tenant_id' }) tenantId!: string;
  @Column('text') text!: string;
  @Column('int') position!: number;
  @Column('text') status!: SteerStatus;
  @Column('text', { nullable: true }) reason!: DropReason | null;
  @Column('int', { nullable: true }) step!: number | null;
  @Column('text', { nullable: true }) boundary!: Boundary | null;
  @Column('int', { name: 'request_step', nullable: true }) requestStep!: number | null;
  @Column('uuid', { name: 'next_turn_id', nullable: true }) nextTurnId!: string | null;
  @Column('timestamptz', { name: 'queued_at' }) queuedAt!: Date;
  @Column('timestamptz', { name: 'settled_at', nullable: true }) settledAt!: Date | null;
}

export const READ_MODEL_ENTITIES = [ConversationEntity, TurnEntity, MessageEntity, SteerEntity];

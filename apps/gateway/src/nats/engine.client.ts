import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  type ApprovalAnswer,
  SteerlineError,
  type CancelTurnCommand,
  type DecideApprovalCommand,
  type EditSteerCommand,
  type CreateConversationCommand,
  type Receipt,
  type StartTurnAnswer,
  type StartTurnCommand,
  type SubmitConversationSteerCommand,
  type SubmitSteerCommand,
  type Subjects,
  type WithdrawSteerCommand,
} from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { COMMAND_TIMEOUT_MS, NATS_CONNECTION, SUBJECTS } from './nats.tokens';
import { EventLogClient } from './event-log.client';
import { ReadModelsClient } from './read-models.client';

/**
 * Commands to the engine (docs/design.md §4). Nobody answering a turn's own subject
 * means no engine runs that turn; nobody answering the engine's queue subjects
 * means no engine runs at all.
 */
@Injectable()
export class EngineClient {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
    @Inject(ReadModelsClient) private readonly reads: ReadModelsClient,
    @Inject(EventLogClient) private readonly log: EventLogClient,
  ) {}

  createConversation(body: CreateConversationCommand): Promise<{ id: string }> {
    return request(this.nc, this.s.createConversation, body, { timeoutMs: COMMAND_TIMEOUT_MS, noResponders: 'unavailable' });
  }

  startTurn(body: StartTurnCommand): Promise<StartTurnAnswer> {
    return request(this.nc, this.s.startTurn, body, { timeoutMs: COMMAND_TIMEOUT_MS, noResponders: 'unavailable' });
  }

  steerTurn(turnId: string, body: SubmitSteerCommand): Promise<Receipt> {
    return this.turnCommand(this.s.turnSteer(turnId), body, turnId);
  }

  // The engine that owns the conversation's running turn answers; none means no turn runs.
  steerConversation(conversationId: string, body: SubmitConversationSteerCommand): Promise<Receipt> {
    return this.turnCommand(this.s.conversationSteer(conversationId), body);
  }

  editSteer(turnId: string, body: EditSteerCommand): Promise<Receipt> {
    return this.turnCommand(this.s.editSteer(turnId), body, turnId);
  }

  withdraw(turnId: string, body: WithdrawSteerCommand): Promise<Receipt> {
    return this.turnCommand(this.s.withdraw(turnId), body, turnId);
  }

  decideApproval(turnId: string, body: DecideApprovalCommand): Promise<ApprovalAnswer> {
    return this.turnCommand(this.s.decideApproval(turnId), body, turnId);
  }

  /** A queued turn's owner answers its cancel, so a queued turn can be between engines too. */
  cancel(turnId: string, body: CancelTurnCommand): Promise<{ accepted: true }> {
    return this.turnCommand(this.s.cancel(turnId), body, turnId, ['running', 'queued']);
  }

  private async turnCommand<T>(subject: string, body: { tenantId: string }, turnId?: string, answeredWhen: readonly ('running' | 'queued')[] = ['running']): Promise<T> {
    try {
      return await request<T>(this.nc, subject, body, { timeoutMs: COMMAND_TIMEOUT_MS, noResponders: 'turn_not_running' });
    } catch (err) {
      if (turnId && err instanceof SteerlineError && err.code === 'turn_not_running' && (await this.betweenEngines(body.tenantId, turnId, answeredWhen))) {
        throw new SteerlineError('unavailable', 'the turn is moving to another engine (its engine stopped or was lost); send this again in a moment', {
          turnId,
          retryAfterSeconds: 1,
        });
      }
      throw err;
    }
  }

  /**
   * Nobody answers for a turn the log says still runs (or, for a cancel, still
   * waits in the queue): its engine is gone and another one has not adopted it
   * yet (durable turns). Asked only after a `turn_not_running`, so the common
   * path pays nothing.
   */
  private async betweenEngines(tenantId: string, turnId: string, answeredWhen: readonly ('running' | 'queued')[]): Promise<boolean> {
    const turn = await this.reads.turn(tenantId, turnId).catch(() => undefined);
    if (!turn || !(answeredWhen as readonly string[]).includes(turn.status)) return false;
    return this.log.turnOpen(tenantId, turn.conversationId, turnId, turn.status as 'running' | 'queued');
  }
}

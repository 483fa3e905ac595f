import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  request,
  type ApprovalAnswer,
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
import { COMMAND_TIMEOUT_MS, NATS_CONNECTION, SUBJECTS } from './nats.tokens';

/**
 * Commands to the engine (DESIGN §4). Nobody answering a turn's own subject
 * means no engine runs that turn; nobody answering the engine's queue subjects
 * means no engine runs at all.
 */
@Injectable()
export class EngineClient {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
  ) {}

  createConversation(body: CreateConversationCommand): Promise<{ id: string }> {
    return request(this.nc, this.s.createConversation, body, { timeoutMs: COMMAND_TIMEOUT_MS, noResponders: 'unavailable' });
  }

  startTurn(body: StartTurnCommand): Promise<StartTurnAnswer> {
    return request(this.nc, this.s.startTurn, body, { timeoutMs: COMMAND_TIMEOUT_MS, noResponders: 'unavailable' });
  }

  steerTurn(turnId: string, body: SubmitSteerCommand): Promise<Receipt> {
    return this.turnCommand(this.s.turnSteer(turnId), body);
  }

  // The engine that owns the conversation's running turn answers; none means no turn runs.
  steerConversation(conversationId: string, body: SubmitConversationSteerCommand): Promise<Receipt> {
    return this.turnCommand(this.s.conversationSteer(conversationId), body);
  }

  editSteer(turnId: string, body: EditSteerCommand): Promise<Receipt> {
    return this.turnCommand(this.s.editSteer(turnId), body);
  }

  withdraw(turnId: string, body: WithdrawSteerCommand): Promise<Receipt> {
    return this.turnCommand(this.s.withdraw(turnId), body);
  }

  decideApproval(turnId: string, body: DecideApprovalCommand): Promise<ApprovalAnswer> {
    return this.turnCommand(this.s.decideApproval(turnId), body);
  }

  cancel(turnId: string, body: CancelTurnCommand): Promise<{ accepted: true }> {
    return this.turnCommand(this.s.cancel(turnId), body);
  }

  private turnCommand<T>(subject: string, body: unknown): Promise<T> {
    return request<T>(this.nc, subject, body, { timeoutMs: COMMAND_TIMEOUT_MS, noResponders: 'turn_not_running' });
  }
}

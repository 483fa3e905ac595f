import { Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import type { TurnView } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { JsonBody, UuidPipe } from '../http/params';
import { EngineClient } from '../nats/engine.client';
import { ReadModelsClient } from '../nats/read-models.client';
import { CancelTurnBody, StartTurnBody } from './turn-bodies';

/** DESIGN §5: start a turn, read it, cancel it. */
@Controller('v1')
export class TurnsController {
  constructor(
    @Inject(EngineClient) private readonly engine: EngineClient,
    @Inject(ReadModelsClient) private readonly reads: ReadModelsClient,
  ) {}

  /** 202: the turn runs on after the answer; its progress is read from the log. */
  @Post('conversations/:cid/turns')
  @HttpCode(202)
  startTurn(
    @Tenant() tenantId: string,
    @Param('cid', UuidPipe) conversationId: string,
    @JsonBody(StartTurnBody) body: StartTurnBody,
  ): Promise<{ turnId: string }> {
    return this.engine.startTurn({ tenantId, conversationId, ...body });
  }

  @Get('turns/:tid')
  readTurn(@Tenant() tenantId: string, @Param('tid', UuidPipe) turnId: string): Promise<TurnView> {
    return this.reads.turn(tenantId, turnId);
  }

  /** 202: the engine settles the queued steers and ends the turn after answering. */
  @Post('turns/:tid/cancel')
  @HttpCode(202)
  cancel(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @JsonBody(CancelTurnBody, { optional: true }) body: CancelTurnBody,
  ): Promise<{ accepted: true }> {
    return this.engine.cancel(turnId, { tenantId, ...body });
  }
}

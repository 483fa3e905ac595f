import { Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { StartTurnAnswerSchema, type StartTurnAnswer, type TurnView, TurnViewSchema } from '@steerline/contracts';
import { AgentsService } from '../agents/agents.service';
import { Tenant } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import { JsonBody, UuidPipe } from '../http/params';
import { EngineClient } from '../nats/engine.client';
import { EventLogClient } from '../nats/event-log.client';
import { ReadModelsClient } from '../nats/read-models.client';
import { CancelTurnBody, StartTurnBody } from './turn-bodies';

/** docs/design.md §5: start a turn, read it, cancel it. */
@Controller('v1')
export class TurnsController {
  constructor(
    @Inject(EngineClient) private readonly engine: EngineClient,
    @Inject(ReadModelsClient) private readonly reads: ReadModelsClient,
    @Inject(EventLogClient) private readonly eventLog: EventLogClient,
    @Inject(AgentsService) private readonly agents: AgentsService,
  ) {}

  /** 202: the turn runs on after the answer; its progress is read from the log. */
  @Post('conversations/:cid/turns')
  @HttpCode(202)
  @ApiDoc({
    summary: 'Start a turn; it runs on after the answer. With whenBusy "queue" while a turn runs, it is queued behind it',
    description:
      'A turn may run a stored agent: `agent: "reviewer"` (its latest version) or `"reviewer@3"`. Any field the turn gives (model, instructions, tools, approvals) overrides the agent’s; ' +
      '`settings` merge key by key. TurnStarted records the agent, the version that ran and the resolved fields.',
    body: StartTurnBody,
    responses: {
      202: { description: 'started {turnId, status: "running"} (with runner "external" also lease {token, leaseMs}), or queued {turnId, status: "queued", position}', schema: StartTurnAnswerSchema },
      400: 'invalid_request (bad body, naming the field; unknown or unconfigured model provider or endpoint; a tool choice the allow-list does not allow; an external turn with whenBusy "queue"; neither model nor agent where STEERLINE_DEFAULT_MODEL is unset or names an agent this tenant does not have)',
      404: 'not_found: no such conversation, or no such agent or agent version, for this tenant',
      409: 'turn_already_running (without whenBusy "queue")',
      413: 'payload_too_large: the body is over 256 KiB (a prompt of 100 000 four-byte characters is), or the command over what NATS carries',
      429: 'turn_queue_full: 10 turns already wait in this conversation',
      503: 'unavailable: no engine answers',
    },
  })
  async startTurn(
    @Tenant() tenantId: string,
    @Param('cid', UuidPipe) conversationId: string,
    @JsonBody(StartTurnBody) body: StartTurnBody,
  ): Promise<StartTurnAnswer> {
    // Checked here, on the tenant's own subject, before the engine is asked: an
    // engine that answers turn_already_running first would reveal that another
    // tenant's conversation exists.
    await this.eventLog.mustExist(tenantId, conversationId);
    // Resolved here, so an unknown agent is refused before the engine is asked; pinned to the version read.
    // A start with neither model nor agent goes on as it is: its default (STEERLINE_DEFAULT_MODEL) is the engine's.
    return this.engine.startTurn(await this.agents.resolve({ tenantId, conversationId, ...body }));
  }

  @Get('turns/:tid')
  @ApiDoc({
    summary: 'A turn: status, steps, steer counts (may lag the log by the projector’s delay)',
    responses: {
      200: { description: 'TurnView {id, conversationId, status, steps, steers: {queued, delivered, dropped}, …}', schema: TurnViewSchema },
      400: 'invalid_request',
      404: 'not_found',
      413: 'payload_too_large: the turn (prompt and answer) is larger than the NATS server carries',
      503: 'unavailable',
    },
  })
  readTurn(@Tenant() tenantId: string, @Param('tid', UuidPipe) turnId: string): Promise<TurnView> {
    return this.reads.turn(tenantId, turnId);
  }

  /** 202: the engine settles the queued steers and ends the turn after answering. */
  @Post('turns/:tid/cancel')
  @HttpCode(202)
  @ApiDoc({
    summary: 'Cancel a running turn (its queued steers are dropped turn_cancelled before TurnCancelled), or a queued turn, which then never starts',
    body: CancelTurnBody,
    bodyOptional: true,
    responses: { 202: { description: 'accepted', schema: { type: 'object', properties: { accepted: { const: true } } } }, 400: 'invalid_request', 404: 'not_found: another tenant’s turn', 409: 'turn_not_running', 503: 'unavailable' },
  })
  cancel(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @JsonBody(CancelTurnBody, { optional: true }) body: CancelTurnBody,
  ): Promise<{ accepted: true }> {
    return this.engine.cancel(turnId, { tenantId, ...body });
  }
}

import { Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { ApprovalAnswerSchema, type ApprovalAnswer } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import { JsonBody, ToolCallIdPipe, UuidPipe } from '../http/params';
import { EngineClient } from '../nats/engine.client';
import { ApprovalDecisionBody } from './approval-bodies';

/** docs/design.md §9: a person approves or denies a tool call that waits for them. */
@Controller('v1')
export class ApprovalsController {
  constructor(@Inject(EngineClient) private readonly engine: EngineClient) {}

  @Post('turns/:tid/approvals/:toolCallId')
  @HttpCode(200)
  @ApiDoc({
    summary: 'Approve or deny a tool call waiting for a decision; the same decision again answers the same',
    body: ApprovalDecisionBody,
    params: { toolCallId: { description: 'the call’s id, as the model named it (1–256 printable characters)', schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,256}$' }, example: 'call_1_0' } },
    responses: {
      200: { description: 'the decision, as recorded', schema: ApprovalAnswerSchema },
      400: 'invalid_request',
      404: 'not_found: no such call waiting in this turn, or another tenant’s turn',
      409: 'already_decided {decision, by, reason?}: the other decision was recorded first; turn_not_running',
      503: 'unavailable',
    },
  })
  decide(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @Param('toolCallId', ToolCallIdPipe) toolCallId: string,
    @JsonBody(ApprovalDecisionBody) body: ApprovalDecisionBody,
  ): Promise<ApprovalAnswer> {
    return this.engine.decideApproval(turnId, { tenantId, toolCallId, ...body });
  }
}

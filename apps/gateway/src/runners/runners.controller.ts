import { Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import type { z } from 'zod';
import {
  LeaseAnswerSchema,
  PublishLiveAnswerSchema,
  RunnerApprovalAnswerSchema,
  RunnerNextSchema,
  type LeaseAnswer,
  type PublishLiveAnswer,
  type RunnerApprovalAnswer,
  type RunnerNext,
} from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { ApiDoc, type ResponseDoc } from '../docs/api-doc';
import { JsonBody, ToolCallIdPipe, UuidPipe } from '../http/params';
import { EngineClient } from '../nats/engine.client';
import { AwaitApprovalBody, PublishLiveBody, RenewLeaseBody, ReportAnswerBody, ReportInterruptedBody, ReportResultsBody, RunnerFailBody } from './runner-bodies';

const refusals: Record<number, ResponseDoc> = {
  400: 'invalid_request: a bad body; a report out of order (an answer for a step that was not requested, results for unknown calls or another step); an engine-run turn',
  403: 'not_lease_holder: the token is not the turn’s runner lease (another runner holds it)',
  404: 'not_found: another tenant’s turn',
  409: 'turn_not_running: the turn ended (or runs nowhere)',
  429: 'rate_limited (Retry-After): the API key’s rate limit; nothing was decided, send it again after retryAfterSeconds',
  503: 'unavailable: the turn is moving to another engine; send it again',
};
const next: ResponseDoc = { description: 'what the runner does next: {next: "model", step, steers} | {next: "tools", step, calls} | {next: "end", status, error?, reason?}', schema: RunnerNextSchema };

/**
 * docs/runner-protocol.md: the process that runs an external turn's loop
 * reports here; each route forwards to the turn owner's NATS subject, which
 * checks the lease and decides with the turn's decider.
 */
@Controller('v1/turns/:tid/runner')
export class RunnersController {
  constructor(@Inject(EngineClient) private readonly engine: EngineClient) {}

  @Post('answer')
  @HttpCode(200)
  @ApiDoc({ summary: 'An external turn’s runner reports a model answer (text, tool calls, usage)', body: ReportAnswerBody, responses: { 200: next, ...refusals } })
  answer(@Tenant() tenantId: string, @Param('tid', UuidPipe) turnId: string, @JsonBody(ReportAnswerBody) body: z.infer<typeof ReportAnswerBody>): Promise<RunnerNext> {
    return this.engine.runner(turnId, 'runnerAnswer', { tenantId, ...body });
  }

  @Post('results')
  @HttpCode(200)
  @ApiDoc({ summary: 'An external turn’s runner reports tool results; after the step’s last one the answer carries the steers for the next request', body: ReportResultsBody, responses: { 200: next, ...refusals } })
  results(@Tenant() tenantId: string, @Param('tid', UuidPipe) turnId: string, @JsonBody(ReportResultsBody) body: z.infer<typeof ReportResultsBody>): Promise<RunnerNext> {
    return this.engine.runner(turnId, 'runnerResults', { tenantId, ...body });
  }

  @Post('fail')
  @HttpCode(200)
  @ApiDoc({ summary: 'An external turn’s runner fails the turn with its own code and message', body: RunnerFailBody, responses: { 200: next, ...refusals } })
  fail(@Tenant() tenantId: string, @Param('tid', UuidPipe) turnId: string, @JsonBody(RunnerFailBody) body: z.infer<typeof RunnerFailBody>): Promise<RunnerNext> {
    return this.engine.runner(turnId, 'runnerFail', { tenantId, ...body });
  }

  @Post('interrupted')
  @HttpCode(200)
  @ApiDoc({ summary: 'An external turn’s runner reports the step it stopped for an urgent steer; the answer carries the steers and the cut', body: ReportInterruptedBody, responses: { 200: next, ...refusals } })
  interrupted(@Tenant() tenantId: string, @Param('tid', UuidPipe) turnId: string, @JsonBody(ReportInterruptedBody) body: z.infer<typeof ReportInterruptedBody>): Promise<RunnerNext> {
    return this.engine.runner(turnId, 'runnerInterrupted', { tenantId, ...body });
  }

  @Post('lease')
  @HttpCode(200)
  @ApiDoc({
    summary: 'Renews the runner lease; with waitMs a long poll, answered at once when the turn ends (a cancel) or an urgent steer asks the runner to stop its step (interrupt)',
    body: RenewLeaseBody,
    responses: { 200: { description: '{leaseMs, turn: {next: "running"} | {next: "end", status, …}, interrupt?: {step}}', schema: LeaseAnswerSchema }, ...refusals },
  })
  lease(@Tenant() tenantId: string, @Param('tid', UuidPipe) turnId: string, @JsonBody(RenewLeaseBody) body: z.infer<typeof RenewLeaseBody>): Promise<LeaseAnswer> {
    return this.engine.runner(turnId, 'runnerLease', { tenantId, ...body }, body.waitMs);
  }

  @Post('approvals/:toolCallId')
  @HttpCode(200)
  @ApiDoc({
    summary: 'Waits up to waitMs for the decision on a call of the turn that asked for approval',
    body: AwaitApprovalBody,
    params: { toolCallId: { description: 'the call’s id, as the model named it (1–256 printable characters)', schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,256}$' }, example: 'call_1_0' } },
    responses: { 200: { description: '{toolCallId, decision: approved | denied | pending, reason?, by?}', schema: RunnerApprovalAnswerSchema }, ...refusals },
  })
  approval(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @Param('toolCallId', ToolCallIdPipe) toolCallId: string,
    @JsonBody(AwaitApprovalBody) body: z.infer<typeof AwaitApprovalBody>,
  ): Promise<RunnerApprovalAnswer> {
    return this.engine.runner(turnId, 'runnerApproval', { tenantId, toolCallId, ...body }, body.waitMs);
  }

  @Post('live')
  @HttpCode(200)
  @ApiDoc({ summary: 'Publishes an external turn’s live output (ModelDelta, ToolProgress) to its watchers', body: PublishLiveBody, responses: { 200: { description: '{published}', schema: PublishLiveAnswerSchema }, ...refusals } })
  live(@Tenant() tenantId: string, @Param('tid', UuidPipe) turnId: string, @JsonBody(PublishLiveBody) body: z.infer<typeof PublishLiveBody>): Promise<PublishLiveAnswer> {
    return this.engine.runner(turnId, 'runnerLive', { tenantId, ...body });
  }
}

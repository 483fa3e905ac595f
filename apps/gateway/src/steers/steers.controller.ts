import { Controller, Delete, Get, Headers, Inject, Param, Patch, Post, Res } from '@nestjs/common';
import { ReceiptSchema, WAIT_MAX_SECONDS, type Receipt } from '@steerline/contracts';
import { ApiDoc, type RouteDoc } from '../docs/api-doc';
import { Tenant } from '../auth/auth.guard';
import { clientGone, type HttpResponse } from '../http/http.types';
import { JsonBody, UuidPipe } from '../http/params';
import { parsePreferWait, preferenceApplied } from './prefer';
import { answerReceipt } from './receipts';
import { ConversationSteerBody, EditSteerBody, TurnSteerBody } from './steer-bodies';
import { SteersService } from './steers.service';

const PREFER = { Prefer: { description: `RFC 7240 wait=<seconds> (at most ${WAIT_MAX_SECONDS}): wait for the steer's settlement` } };
const RECEIPT_ANSWERS: RouteDoc['responses'] = {
  200: { description: 'delivered (within the wait)', schema: ReceiptSchema },
  202: { description: 'queued: accepted, not yet delivered', schema: ReceiptSchema },
  400: 'invalid_request (empty, whitespace-only, over-long text or control characters; bad ids; unknown fields)',
  404: 'not_found: another tenant’s turn or conversation',
  409: 'steer_dropped {reason, steerId, turnId, position, text, nextTurnId?} within the wait; turn_not_running; turn_moved_on',
  429: 'queue_full; rate_limited (Retry-After)',
  503: 'unavailable {steerId}: no answer in time; resubmitting the same steerId is idempotent',
};

/** docs/design.md §5: steer a turn or a conversation, read a steer's receipt, withdraw it. */
@Controller('v1')
export class SteersController {
  constructor(@Inject(SteersService) private readonly steers: SteersService) {}

  @Post('turns/:tid/steers')
  @ApiDoc({ summary: 'Steer a running turn', body: TurnSteerBody, headers: PREFER, responses: RECEIPT_ANSWERS })
  async steerTurn(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @JsonBody(TurnSteerBody) body: TurnSteerBody,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) res: HttpResponse,
  ): Promise<Receipt> {
    const wait = honourWait(prefer, res);
    return answerReceipt(res, await this.steers.submit(tenantId, { turnId }, body, wait, goneWhileWaiting(wait, res)));
  }

  @Post('conversations/:cid/steers')
  @ApiDoc({
    summary: 'Steer the running turn of a conversation (refused with turn_moved_on when it is not expectedTurnId)',
    body: ConversationSteerBody,
    headers: PREFER,
    responses: RECEIPT_ANSWERS,
  })
  async steerConversation(
    @Tenant() tenantId: string,
    @Param('cid', UuidPipe) conversationId: string,
    @JsonBody(ConversationSteerBody) body: ConversationSteerBody,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) res: HttpResponse,
  ): Promise<Receipt> {
    const wait = honourWait(prefer, res);
    const target = { conversationId, expectedTurnId: body.expectedTurnId };
    return answerReceipt(res, await this.steers.submit(tenantId, target, body, wait, goneWhileWaiting(wait, res)));
  }

  @Get('turns/:tid/steers/:sid')
  @ApiDoc({
    summary: 'A steer’s receipt; with Prefer: wait, once it is settled',
    headers: PREFER,
    responses: { 200: RECEIPT_ANSWERS[200], 202: RECEIPT_ANSWERS[202], 400: 'invalid_request', 404: 'not_found', 409: 'steer_dropped {reason, text, …}', 503: 'unavailable' },
  })
  async readSteer(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @Param('sid', UuidPipe) steerId: string,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) res: HttpResponse,
  ): Promise<Receipt> {
    res.setHeader('Vary', 'Prefer');
    const wait = honourWait(prefer, res);
    return answerReceipt(res, await this.steers.read(tenantId, turnId, steerId, wait, goneWhileWaiting(wait, res)));
  }

  /** docs/design.md §2, "Edit": decided by the turn's owner, so an edit and the boundary never both win. */
  @Patch('turns/:tid/steers/:sid')
  @ApiDoc({
    summary: 'Edit a queued steer’s text (same position); the model reads the last edit',
    body: EditSteerBody,
    responses: {
      200: { description: 'the queued receipt with the new text', schema: ReceiptSchema },
      400: 'invalid_request (empty, over-long text or control characters)',
      404: 'not_found',
      409: 'already_delivered; steer_dropped {reason, text, …}; turn_not_running',
      503: 'unavailable',
    },
  })
  edit(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @Param('sid', UuidPipe) steerId: string,
    @JsonBody(EditSteerBody) body: EditSteerBody,
  ): Promise<Receipt> {
    return this.steers.edit(tenantId, turnId, steerId, body.text);
  }

  /** A withdraw's answer is the dropped receipt itself, so it is a 200, not `steer_dropped`. */
  @Delete('turns/:tid/steers/:sid')
  @ApiDoc({
    summary: 'Withdraw a queued steer',
    responses: { 200: { description: 'the dropped receipt (reason withdrawn) with its text', schema: ReceiptSchema }, 400: 'invalid_request', 404: 'not_found', 409: 'already_delivered; turn_not_running', 503: 'unavailable' },
  })
  async withdraw(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @Param('sid', UuidPipe) steerId: string,
  ): Promise<Receipt> {
    return this.steers.withdraw(tenantId, turnId, steerId);
  }
}

// Set before the outcome is known so error answers (a drop) carry it too.
function honourWait(prefer: string | undefined, res: HttpResponse): number {
  const wait = parsePreferWait(prefer);
  if (wait > 0) res.setHeader('Preference-Applied', preferenceApplied(wait));
  return wait;
}

// Only a wait can outlive its client: without one, no signal (and no close listener) is made for it.
function goneWhileWaiting(wait: number, res: HttpResponse): AbortSignal | undefined {
  return wait > 0 ? clientGone(res) : undefined;
}

import { Controller, Delete, Get, Headers, Inject, Param, Post, Res } from '@nestjs/common';
import type { Receipt } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { clientGone, type HttpResponse } from '../http/http.types';
import { JsonBody, UuidPipe } from '../http/params';
import { parsePreferWait, preferenceApplied } from './prefer';
import { answerReceipt } from './receipts';
import { ConversationSteerBody, TurnSteerBody } from './steer-bodies';
import { SteersService } from './steers.service';

/** DESIGN §5: steer a turn or a conversation, read a steer's receipt, withdraw it. */
@Controller('v1')
export class SteersController {
  constructor(@Inject(SteersService) private readonly steers: SteersService) {}

  @Post('turns/:tid/steers')
  async steerTurn(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @JsonBody(TurnSteerBody) body: TurnSteerBody,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) res: HttpResponse,
  ): Promise<Receipt> {
    const wait = honourWait(prefer, res);
    return answerReceipt(res, await this.steers.submit(tenantId, { turnId }, body, wait, clientGone(res)));
  }

  @Post('conversations/:cid/steers')
  async steerConversation(
    @Tenant() tenantId: string,
    @Param('cid', UuidPipe) conversationId: string,
    @JsonBody(ConversationSteerBody) body: ConversationSteerBody,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) res: HttpResponse,
  ): Promise<Receipt> {
    const wait = honourWait(prefer, res);
    const target = { conversationId, expectedTurnId: body.expectedTurnId };
    return answerReceipt(res, await this.steers.submit(tenantId, target, body, wait, clientGone(res)));
  }

  @Get('turns/:tid/steers/:sid')
  async readSteer(
    @Tenant() tenantId: string,
    @Param('tid', UuidPipe) turnId: string,
    @Param('sid', UuidPipe) steerId: string,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) res: HttpResponse,
  ): Promise<Receipt> {
    res.setHeader('Vary', 'Prefer');
    const wait = honourWait(prefer, res);
    return answerReceipt(res, await this.steers.read(tenantId, turnId, steerId, wait, clientGone(res)));
  }

  /** A withdraw's answer is the dropped receipt itself, so it is a 200, not `steer_dropped`. */
  @Delete('turns/:tid/steers/:sid')
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

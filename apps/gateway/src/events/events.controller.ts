import { Controller, Get, Headers, Inject, Param, Query, Req, Res } from '@nestjs/common';
import { EVENT_TYPES, SteerlineError } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import type { HttpRequest, HttpResponse } from '../http/http.types';
import { UuidPipe } from '../http/params';
import { EventStreams } from './event-streams';
import { resumeAfter } from './sse';

/** docs/design.md §5 and §11: a conversation's events as Server-Sent Events, resumable with Last-Event-ID, with live output. */
@Controller('v1/conversations')
export class EventsController {
  constructor(@Inject(EventStreams) private readonly streams: EventStreams) {}

  @Get(':cid/events')
  @ApiDoc({
    summary: 'The conversation’s events as Server-Sent Events, replayed from the log then followed live',
    description:
      `Each event: \`id:\` its stream sequence, \`event:\` its type (${EVENT_TYPES.join(', ')}), \`data:\` the event envelope as JSON. ` +
      'Live messages (`event: ModelDelta` / `event: ToolProgress`) come without an `id:` line and are never replayed. ' +
      'Comment lines are heartbeats, or say why the stream ends (a reader too slow: reconnect with Last-Event-ID). ' +
      'Reconnect with Last-Event-ID (or ?after=) for no gap and no duplicate, on any gateway.',
    headers: { 'Last-Event-ID': { description: 'the last id received: resume after it (wins over ?after=)' } },
    query: {
      after: { description: 'a stream sequence: only events after it', schema: { type: 'integer', minimum: 0 } },
      live: { description: '1 (default): interleave live messages; 0: stored events only', schema: { type: 'string', enum: ['0', '1'] } },
    },
    responses: {
      200: { description: 'an event stream', contentType: 'text/event-stream', schema: { type: 'string' } },
      400: 'invalid_request: Last-Event-ID or after is not a sequence, or live is not 0 or 1',
      404: 'not_found (also another tenant’s conversation)',
      429: 'rate_limited: this gateway, or this API key, has its maximum of open event streams',
      503: 'unavailable: the log does not answer, or the gateway is shutting down',
    },
  })
  events(
    @Tenant() tenantId: string,
    @Param('cid', UuidPipe) conversationId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query('after') after: unknown,
    @Query('live') live: unknown,
    @Req() req: HttpRequest,
    @Res() res: HttpResponse,
  ): Promise<void> {
    const request = { tenantId, conversationId, clientKey: req.clientKey ?? 'unknown', after: resumeAfter(lastEventId, after), live: liveFlag(live) };
    return this.streams.stream(request, res);
  }
}

function liveFlag(value: unknown): boolean {
  if (value === undefined || value === '1') return true;
  if (value === '0') return false;
  throw new SteerlineError('invalid_request', 'live must be 0 or 1');
}

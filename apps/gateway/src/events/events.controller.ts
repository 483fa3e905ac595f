import { Controller, Get, Headers, Inject, Param, Query, Res } from '@nestjs/common';
import { EVENT_TYPES } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import type { HttpResponse } from '../http/http.types';
import { UuidPipe } from '../http/params';
import { EventStreams } from './event-streams';
import { resumeAfter } from './sse';

/** docs/design.md §5: a conversation's events as Server-Sent Events, resumable with Last-Event-ID. */
@Controller('v1/conversations')
export class EventsController {
  constructor(@Inject(EventStreams) private readonly streams: EventStreams) {}

  @Get(':cid/events')
  @ApiDoc({
    summary: 'The conversation’s events as Server-Sent Events, replayed from the log then followed live',
    description:
      `Each event: \`id:\` its stream sequence, \`event:\` its type (${EVENT_TYPES.join(', ')}), \`data:\` the event envelope as JSON. ` +
      'Comment lines are heartbeats. Reconnect with Last-Event-ID (or ?after=) for no gap and no duplicate, on any gateway.',
    headers: { 'Last-Event-ID': { description: 'the last id received: resume after it (wins over ?after=)' } },
    query: { after: { description: 'a stream sequence: only events after it', schema: { type: 'integer', minimum: 0 } } },
    responses: {
      200: { description: 'an event stream', contentType: 'text/event-stream', schema: { type: 'string' } },
      400: 'invalid_request: Last-Event-ID or after is not a sequence',
      404: 'not_found (also another tenant’s conversation)',
      503: 'unavailable: the log does not answer, or the gateway is shutting down',
    },
  })
  events(
    @Tenant() tenantId: string,
    @Param('cid', UuidPipe) conversationId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query('after') after: unknown,
    @Res() res: HttpResponse,
  ): Promise<void> {
    return this.streams.stream({ tenantId, conversationId, after: resumeAfter(lastEventId, after) }, res);
  }
}

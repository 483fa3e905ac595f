import { Controller, Get, Inject, Logger, Param, Post, Query, Req, Res } from '@nestjs/common';
import { z } from 'zod';
import { CONVERSATIONS_PAGE_MAX, ConversationListPageSchema, ConversationViewSchema, ConversationsQuery, parseBody, type ConversationListPage } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import { noteIds, type HttpRequest, type HttpResponse } from '../http/http.types';
import { streamConversation } from './conversation-stream';
import { JsonBody, UuidPipe } from '../http/params';
import { EngineClient } from '../nats/engine.client';
import { ReadModelsClient } from '../nats/read-models.client';

const CreateConversationBody = z.object({}).strict();

// Paging through a long transcript: messages after index `afterMessage`, at most `limit`.
// Other query parameters are ignored, as caches and proxies add their own.
const count = z.string().regex(/^\d{1,9}$/, 'must be a non-negative integer').transform(Number);
const TranscriptPage = z.object({ afterMessage: count.optional(), limit: count.optional() });
const ListPage = z.object({ limit: count.optional(), before: z.string().optional() });

/** docs/design.md §5: create a conversation and read it as the model saw it. */
@Controller('v1/conversations')
export class ConversationsController {
  private readonly logger = new Logger('conversations');

  constructor(
    @Inject(EngineClient) private readonly engine: EngineClient,
    @Inject(ReadModelsClient) private readonly reads: ReadModelsClient,
  ) {}

  @Post()
  @ApiDoc({
    summary: 'Create a conversation',
    body: CreateConversationBody,
    bodyOptional: true,
    responses: { 201: { description: 'created', schema: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } } }, 400: 'invalid_request', 503: 'unavailable: no engine answers' },
  })
  async create(@Tenant() tenantId: string, @JsonBody(CreateConversationBody, { optional: true }) _body: object, @Req() req: HttpRequest): Promise<{ id: string }> {
    const created = await this.engine.createConversation({ tenantId });
    noteIds(req, { conversationId: created.id });
    return created;
  }

  @Get()
  @ApiDoc({
    summary: 'The caller’s conversations, newest first, a page at a time',
    query: {
      limit: { description: `at most this many (default 20, at most ${CONVERSATIONS_PAGE_MAX})`, schema: { type: 'integer', minimum: 1, maximum: CONVERSATIONS_PAGE_MAX } },
      before: { description: 'the `next` cursor of the previous page: the conversations older than its last one', schema: { type: 'string' } },
    },
    responses: { 200: { description: 'ConversationListPage {conversations: [{id, createdAt, messageCount, lastTurn?}], next?}', schema: ConversationListPageSchema }, 400: 'invalid_request', 503: 'unavailable' },
  })
  list(@Tenant() tenantId: string, @Query() query: unknown): Promise<ConversationListPage> {
    const page = parseBody(ListPage, query);
    return this.reads.conversations(parseBody(ConversationsQuery, { tenantId, ...page }));
  }

  @Get(':cid')
  @ApiDoc({
    summary: 'The conversation as the model saw it: turns, messages (the model context, in order) and every steer with its status',
    description:
      'The whole conversation in one JSON body, however long: it is streamed page by page from the read models, so its size is not limited by NATS. ' +
      '`afterMessage` and `limit` select a range of messages; turns and steers are always complete. A failure after the first byte aborts the body (invalid JSON): read again.',
    query: {
      afterMessage: { description: 'skip this many messages (paging)', schema: { type: 'integer', minimum: 0 } },
      limit: { description: 'at most this many messages', schema: { type: 'integer', minimum: 1 } },
    },
    responses: {
      200: { description: 'ConversationView {id, createdAt, turns, messages, steers}', schema: ConversationViewSchema },
      400: 'invalid_request',
      404: 'not_found (also for another tenant’s conversation)',
      413: 'payload_too_large: one turn, message or steer alone is larger than the NATS server carries',
      503: 'unavailable',
    },
  })
  read(@Tenant() tenantId: string, @Param('cid', UuidPipe) conversationId: string, @Query() query: unknown, @Res() res: HttpResponse): Promise<void> {
    const range = parseBody(TranscriptPage, query);
    return streamConversation((q, at) => this.reads.conversation(q, at), { tenantId, conversationId, ...range }, res, (err) =>
      this.logger.warn({ msg: 'conversation read aborted after its first page', conversationId, tenantId, error: (err as Error)?.message }),
    );
  }
}

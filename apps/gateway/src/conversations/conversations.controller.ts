import { Controller, Get, Inject, Param, Post, Query } from '@nestjs/common';
import { z } from 'zod';
import { parseBody, type ConversationView } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { JsonBody, UuidPipe } from '../http/params';
import { EngineClient } from '../nats/engine.client';
import { ReadModelsClient } from '../nats/read-models.client';

const CreateConversationBody = z.object({}).strict();

// Paging through a long transcript: messages after index `afterMessage`, at most `limit`.
// Other query parameters are ignored, as caches and proxies add their own.
const count = z.string().regex(/^\d{1,9}$/, 'must be a non-negative integer').transform(Number);
const TranscriptPage = z.object({ afterMessage: count.optional(), limit: count.optional() });

/** DESIGN §5: create a conversation and read it as the model saw it. */
@Controller('v1/conversations')
export class ConversationsController {
  constructor(
    @Inject(EngineClient) private readonly engine: EngineClient,
    @Inject(ReadModelsClient) private readonly reads: ReadModelsClient,
  ) {}

  @Post()
  create(@Tenant() tenantId: string, @JsonBody(CreateConversationBody, { optional: true }) _body: object): Promise<{ id: string }> {
    return this.engine.createConversation({ tenantId });
  }

  @Get(':cid')
  read(@Tenant() tenantId: string, @Param('cid', UuidPipe) conversationId: string, @Query() query: unknown): Promise<ConversationView> {
    const page = parseBody(TranscriptPage, query);
    return this.reads.conversation({ tenantId, conversationId, ...page });
  }
}

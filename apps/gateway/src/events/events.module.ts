import { Module } from '@nestjs/common';
import { EventsController } from './events.controller';
import { ConversationTails } from './conversation-tails';
import { EventStreams } from './event-streams';

@Module({ controllers: [EventsController], providers: [ConversationTails, EventStreams], exports: [ConversationTails] })
export class EventsModule {}

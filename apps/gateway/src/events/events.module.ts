import { Module } from '@nestjs/common';
import { EventsController } from './events.controller';
import { EventStreams } from './event-streams';

@Module({ controllers: [EventsController], providers: [EventStreams] })
export class EventsModule {}

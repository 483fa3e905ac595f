import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { TurnsController } from './turns.controller';

@Module({ imports: [AgentsModule], controllers: [TurnsController] })
export class TurnsModule {}

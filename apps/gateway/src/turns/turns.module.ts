import { Module } from '@nestjs/common';
import { TurnsController } from './turns.controller';

@Module({ controllers: [TurnsController] })
export class TurnsModule {}

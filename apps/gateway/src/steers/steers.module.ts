import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { SteersController } from './steers.controller';
import { ReceiptWaiter } from './receipt-waiter';
import { SettlementInterest } from './settlement-interest';
import { SteersService } from './steers.service';

@Module({ imports: [EventsModule], controllers: [SteersController], providers: [SteersService, ReceiptWaiter, SettlementInterest] })
export class SteersModule {}

import { Module } from '@nestjs/common';
import { SteersController } from './steers.controller';
import { ReceiptWaiter } from './receipt-waiter';
import { SteersService } from './steers.service';
import { SteerTally } from './steer-tally';

@Module({ controllers: [SteersController], providers: [SteersService, ReceiptWaiter, SteerTally] })
export class SteersModule {}

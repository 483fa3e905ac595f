import { Module } from '@nestjs/common';
import { SteersController } from './steers.controller';
import { ReceiptWaiter } from './receipt-waiter';
import { SteersService } from './steers.service';

@Module({ controllers: [SteersController], providers: [SteersService, ReceiptWaiter] })
export class SteersModule {}

import { Module } from '@nestjs/common';
import { SteersController } from './steers.controller';
import { ReceiptWaiter } from './receipt-waiter';
import { SteersService } from './steers.service';
import { WaitingRequests } from '../observability/waiting-requests';

@Module({ controllers: [SteersController], providers: [SteersService, ReceiptWaiter, WaitingRequests] })
export class SteersModule {}

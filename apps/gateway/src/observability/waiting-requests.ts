import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ReceiptWaiter } from '../steers/receipt-waiter';
import { GatewayMetrics } from './metrics';

/** `steerline_waiting_requests`: the requests this gateway holds open for a steer's settlement (`Prefer: wait`). */
@Injectable()
export class WaitingRequests implements OnModuleInit {
  constructor(
    @Inject(ReceiptWaiter) private readonly waiter: ReceiptWaiter,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
  ) {}

  onModuleInit(): void {
    this.metrics.countWaiting(() => this.waiter.pending);
  }
}

import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { MetricsController } from './metrics.controller';
import { GatewayMetrics } from './metrics';
import { ObservedIdsInterceptor } from './observed-ids.interceptor';

/** Metrics made by `startGateway` (its request log needs them before Nest routes anything). */
@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(metrics: GatewayMetrics): DynamicModule {
    return {
      module: ObservabilityModule,
      controllers: [MetricsController],
      providers: [{ provide: GatewayMetrics, useValue: metrics }, { provide: APP_INTERCEPTOR, useClass: ObservedIdsInterceptor }],
      exports: [GatewayMetrics],
    };
  }
}

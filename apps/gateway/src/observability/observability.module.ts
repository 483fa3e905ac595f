import { Global, Module, type DynamicModule } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { GatewayMetrics } from './metrics';

/** Metrics made by `startGateway` (its request log needs them before Nest routes anything). */
@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(metrics: GatewayMetrics): DynamicModule {
    return {
      module: ObservabilityModule,
      controllers: [MetricsController],
      providers: [{ provide: GatewayMetrics, useValue: metrics }],
      exports: [GatewayMetrics],
    };
  }
}

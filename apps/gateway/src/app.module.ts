import { Module, type DynamicModule } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjects } from '@steerline/contracts';
import { AgentsModule } from './agents/agents.module';
import { ApprovalsModule } from './approvals/approvals.module';
import { AuthModule } from './auth/auth.module';
import { GATEWAY_CONFIG, type GatewayConfig } from './config';
import { ConversationsModule } from './conversations/conversations.module';
import { DiscoveryModule } from './discovery/discovery.module';
import { DocsModule } from './docs/docs.module';
import { EventsModule } from './events/events.module';
import { HealthModule } from './health/health.module';
import { NatsModule } from './nats/nats.module';
import type { GatewayMetrics } from './observability/metrics';
import { ObservabilityModule } from './observability/observability.module';
import { RunnersModule } from './runners/runners.module';
import { SteersModule } from './steers/steers.module';
import { TurnsModule } from './turns/turns.module';

@Module({})
export class AppModule {
  static forRoot(config: GatewayConfig, nc: NatsConnection, metrics: GatewayMetrics): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        NatsModule.forRoot(nc, subjects(config.prefix, { subjectPartitions: config.subjectPartitions })),
        ObservabilityModule.forRoot(metrics),
        AuthModule.forRoot(config.apiKeys, config.rateLimit, config.apiKeysFile),
        HealthModule,
        DocsModule,
        ConversationsModule,
        AgentsModule,
        DiscoveryModule,
        TurnsModule,
        SteersModule,
        ApprovalsModule,
        RunnersModule,
        EventsModule,
      ],
      providers: [{ provide: GATEWAY_CONFIG, useValue: config }],
      exports: [GATEWAY_CONFIG],
    };
  }
}

import { Module, type DynamicModule } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjects } from '@steerline/contracts';
import { AuthModule } from './auth/auth.module';
import { GATEWAY_CONFIG, type GatewayConfig } from './config';
import { ConversationsModule } from './conversations/conversations.module';
import { HealthModule } from './health/health.module';
import { NatsModule } from './nats/nats.module';
import { SteersModule } from './steers/steers.module';
import { TurnsModule } from './turns/turns.module';

@Module({})
export class AppModule {
  static forRoot(config: GatewayConfig, nc: NatsConnection): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [NatsModule.forRoot(nc, subjects(config.prefix)), AuthModule.forRoot(config.apiKeys), HealthModule, ConversationsModule, TurnsModule, SteersModule],
      providers: [{ provide: GATEWAY_CONFIG, useValue: config }],
      exports: [GATEWAY_CONFIG],
    };
  }
}

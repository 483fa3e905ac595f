import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Subjects } from '@steerline/contracts';
import { EngineClient } from './engine.client';
import { EventLogClient } from './event-log.client';
import { NATS_CONNECTION, SUBJECTS } from './nats.tokens';
import { ReadModelsClient } from './read-models.client';

/**
 * The connection is made (and drained) by `startGateway`, outside Nest, so
 * that start-up fails before any route exists when NATS is unreachable.
 */
@Global()
@Module({})
export class NatsModule {
  static forRoot(nc: NatsConnection, subjects: Subjects): DynamicModule {
    const providers = [
      { provide: NATS_CONNECTION, useValue: nc },
      { provide: SUBJECTS, useValue: subjects },
      EngineClient,
      ReadModelsClient,
      EventLogClient,
    ];
    return { module: NatsModule, providers, exports: providers };
  }
}

import { Inject, Injectable, Logger, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { DataSource } from 'typeorm';
import { connectNats } from '@steerline/runtime';
import type { PersistenceConfig } from './config';
import { openReadModels } from './migrations/database';

export const NATS_CONNECTION = Symbol('NATS_CONNECTION');

/** The two connections the app shares: NATS, and the read-model database (created and migrated on open). */
export function connectionProviders(config: PersistenceConfig): Provider[] {
  return [
    { provide: NATS_CONNECTION, useFactory: () => connectNats(config.natsUrl, 'steerline-persistence') },
    { provide: DataSource, useFactory: () => openReadModels(config.databaseUrl, undefined, config.partitions) },
  ];
}

/**
 * Closes the connections last: Nest runs every onModuleDestroy (the projector
 * and the responders finish their work there) before any onApplicationShutdown.
 */
@Injectable()
export class ConnectionCloser implements OnApplicationShutdown {
  private readonly logger = new Logger('Connections');

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly dataSource: DataSource,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    if (!this.nc.isClosed()) {
      await this.nc.drain().catch((err: unknown) => this.logger.warn({ msg: 'NATS drain failed', error: String(err) }));
    }
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

import 'reflect-metadata';
import type { LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createLogger, nestLogger } from '@steerline/runtime';
import type { PersistenceConfig } from './config';
import { PersistenceModule } from './persistence.module';
import { PersistenceMetrics } from './observability/persistence-metrics';
import { Projector, type ProjectorControl } from './projector/projector';

export interface PersistenceApp {
  /** Stops fetching and answering, lets work in flight finish, drains NATS and closes the database. */
  close(): Promise<void>;
  projector: ProjectorControl;
  /** Counted by the projector; main.ts serves them on METRICS_PORT. */
  metrics: PersistenceMetrics;
  /** What it was started with: where its database and stream are. */
  config: PersistenceConfig;
}

/**
 * Starts the persistence service in this process: creates and migrates the
 * database, ensures the stream, starts the projector and the query responders.
 * Resolves once all of that is done.
 */
export async function startPersistence(config: PersistenceConfig, opts: { logger?: LoggerService } = {}): Promise<PersistenceApp> {
  const app = await NestFactory.createApplicationContext(PersistenceModule.forRoot(config), {
    logger: opts.logger ?? nestLogger(createLogger()),
    // Throw start-up failures to the caller instead of exiting the process.
    abortOnError: false,
  });
  let closing: Promise<void> | undefined;
  const metrics = app.get(PersistenceMetrics);
  metrics.watch(app.get(Projector));
  return {
    metrics,
    projector: app.get(Projector),
    config,
    close: () => (closing ??= app.close()),
  };
}

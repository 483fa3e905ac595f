/**
 * An example Nest service that follows Steerline's steer settlements with
 * `@EventPattern`, over the JetStream transport in `@steerline/runtime/nest`.
 *
 *   NATS_URL=nats://127.0.0.1:4222 STEERLINE_PREFIX=steerline \
 *   SETTLEMENTS_FILE=settlements.jsonl node dist/examples/nest-consumer/main.js
 *
 * Every settlement is appended to SETTLEMENTS_FILE with its stream sequence,
 * and that file is also the checkpoint the transport resumes from: killed at
 * any moment and restarted, the service records each settlement exactly once.
 * NEST_CONSUMER_DURABLE names its durable consumer (default nest-settlements).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { MicroserviceOptions } from '@nestjs/microservices';
import { createLogger, nestLogger } from '@steerline/runtime';
import { JetStreamEventsServer } from '@steerline/runtime/nest';
import { SettlementStore } from './settlement-store';
import { SettlementsController } from './settlements.controller';

async function main(): Promise<void> {
  const logger = createLogger();
  const store = new SettlementStore(process.env.SETTLEMENTS_FILE ?? 'settlements.jsonl');

  @Module({ controllers: [SettlementsController], providers: [{ provide: SettlementStore, useValue: store }] })
  class SettlementsModule {}

  const app = await NestFactory.createMicroservice<MicroserviceOptions>(SettlementsModule, {
    logger: nestLogger(logger),
    strategy: new JetStreamEventsServer({
      connection: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
      prefix: process.env.STEERLINE_PREFIX,
      durable: process.env.NEST_CONSUMER_DURABLE ?? 'nest-settlements',
      loadCheckpoint: () => store.lastSeq(),
    }),
  });
  await app.listen();
  logger.info({ context: 'nest-consumer', file: store.file, checkpoint: store.lastSeq() ?? null }, 'nest-consumer ready');

  const stop = () => void app.close().then(() => process.exit(0), () => process.exit(1));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  createLogger().fatal({ context: 'nest-consumer', err }, 'nest-consumer failed to start');
  process.exit(1);
});

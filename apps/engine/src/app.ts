import 'reflect-metadata';
import type { LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createLogger, nestLogger } from '@steerline/runtime';
import type { EngineConfig } from './config';
import { EngineModule } from './engine.module';
import { EngineService } from './engine.service';

export interface RunningEngine {
  engineId: string;
  service: EngineService;
  close(): Promise<void>;
}

/** Starts an engine in this process (used by main.ts and by the tests). */
export async function startEngine(config: EngineConfig, opts: { logger?: LoggerService | false } = {}): Promise<RunningEngine> {
  const app = await NestFactory.createApplicationContext(EngineModule.forConfig(config), {
    logger: opts.logger ?? nestLogger(createLogger()),
  });
  const service = app.get(EngineService);
  await service.start();
  return { engineId: config.engineId, service, close: () => app.close() };
}

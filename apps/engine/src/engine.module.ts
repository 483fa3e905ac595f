import { Module, type DynamicModule } from '@nestjs/common';
import type { EngineConfig } from './config';
import { ENGINE_CONFIG, EngineService } from './engine.service';

@Module({})
export class EngineModule {
  static forConfig(config: EngineConfig): DynamicModule {
    return { module: EngineModule, providers: [{ provide: ENGINE_CONFIG, useValue: config }, EngineService] };
  }
}

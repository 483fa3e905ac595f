import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';
import { ReadinessProbe } from './readiness';

@Module({ controllers: [HealthController], providers: [ReadinessProbe] })
export class HealthModule {}

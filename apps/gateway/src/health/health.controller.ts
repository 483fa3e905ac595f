import { Controller, Get, Inject } from '@nestjs/common';
import { SteerlineError } from '@steerline/contracts';
import { Public } from '../auth/auth.guard';
import { ReadinessProbe, type Readiness } from './readiness';

/** Probes for orchestrators; no API key, as a load balancer has none. */
@Public()
@Controller()
export class HealthController {
  constructor(@Inject(ReadinessProbe) private readonly readiness: ReadinessProbe) {}

  @Get('healthz')
  alive(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('readyz')
  async ready(): Promise<{ status: 'ready'; checks: Readiness['checks'] }> {
    const { ready, checks } = await this.readiness.check();
    if (!ready) {
      const failed = Object.entries(checks).filter(([, result]) => result !== 'ok').map(([name]) => name);
      throw new SteerlineError('unavailable', `not ready: ${failed.join(', ')}`, { checks });
    }
    return { status: 'ready', checks };
  }
}

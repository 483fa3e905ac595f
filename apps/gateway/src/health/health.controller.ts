import { Controller, Get, Inject } from '@nestjs/common';
import { SteerlineError } from '@steerline/contracts';
import { Public } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import { ReadinessProbe, type Readiness } from './readiness';

/** Probes for orchestrators; no API key, as a load balancer has none. */
@Public()
@Controller()
export class HealthController {
  constructor(@Inject(ReadinessProbe) private readonly readiness: ReadinessProbe) {}

  @Get('healthz')
  @ApiDoc({ summary: 'Alive', responses: { 200: { description: 'ok', schema: { type: 'object', properties: { status: { const: 'ok' } } } } } })
  alive(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('readyz')
  @ApiDoc({
    summary: 'Ready: NATS, the event stream and the database (through persistence) answer',
    responses: { 200: { description: 'ready, with each check', schema: { type: 'object' } }, 503: 'unavailable {checks: {nats, stream, database}}' },
  })
  async ready(): Promise<{ status: 'ready'; checks: Readiness['checks'] }> {
    const { ready, checks } = await this.readiness.check();
    if (!ready) {
      const failed = Object.entries(checks).filter(([, result]) => result !== 'ok').map(([name]) => name);
      throw new SteerlineError('unavailable', `not ready: ${failed.join(', ')}`, { checks });
    }
    return { status: 'ready', checks };
  }
}

import { Controller, Get, Inject, Res } from '@nestjs/common';
import { Public } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import type { HttpResponse } from '../http/http.types';
import { GatewayMetrics } from './metrics';

/** Prometheus scrape endpoint; public like the probes (keep it off the public network). */
@Public()
@Controller()
export class MetricsController {
  constructor(@Inject(GatewayMetrics) private readonly metrics: GatewayMetrics) {}

  @Get('metrics')
  @ApiDoc({ summary: 'Prometheus metrics', responses: { 200: { description: 'text exposition format', contentType: 'text/plain', schema: { type: 'string' } } } })
  async scrape(@Res() res: HttpResponse): Promise<void> {
    const text = await this.metrics.registry.metrics();
    res.setHeader('Content-Type', this.metrics.registry.contentType);
    res.end(text);
  }
}

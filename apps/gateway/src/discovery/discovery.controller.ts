import { Controller, Get, Inject } from '@nestjs/common';
import { ModelsAnswerSchema, ToolsAnswerSchema, type ModelsAnswer, type ToolsAnswer } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import { EngineClient } from '../nats/engine.client';

/** docs/design.md §6.1: what a tenant's turns can use, answered by the engines, which hold the tools and the model endpoints. */
@Controller('v1')
export class DiscoveryController {
  constructor(@Inject(EngineClient) private readonly engine: EngineClient) {}

  @Get('tools')
  @ApiDoc({
    summary: 'The tools the tenant’s turns are offered now',
    responses: { 200: { description: '{tools: [{name, description, parameters (JSON Schema), source: builtin | service | mcp:<server>, approval}]}', schema: ToolsAnswerSchema }, 503: 'unavailable: no engine answers' },
  })
  tools(@Tenant() tenantId: string): Promise<ToolsAnswer> {
    return this.engine.tools(tenantId);
  }

  @Get('models')
  @ApiDoc({
    summary: 'The model providers and endpoints configured (never a key)',
    responses: { 200: { description: '{providers, endpoints: [{name, provider, baseURL?}]}', schema: ModelsAnswerSchema }, 503: 'unavailable: no engine answers' },
  })
  models(@Tenant() tenantId: string): Promise<ModelsAnswer> {
    return this.engine.models(tenantId);
  }
}

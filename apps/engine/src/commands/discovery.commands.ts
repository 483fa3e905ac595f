import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { ModelsQuery, ToolsQuery, parseBody, serve, type ModelsAnswer, type Subjects, type ToolsAnswer } from '@steerline/contracts';
import type { ModelRegistry } from '../models/model.registry';
import type { ToolRegistry } from '../tools/tool.registry';
import { onError } from './engine.commands';

/**
 * What a tenant can use (docs/design.md §4), answered by any engine (queue
 * group): its tools as its turns are offered them now, and the model
 * providers and endpoints configured, never a key or a header. The gateway
 * serves them as `GET /v1/tools` and `GET /v1/models`.
 */
export function serveDiscovery(nc: NatsConnection, s: Subjects, tools: ToolRegistry, models: ModelRegistry): Subscription[] {
  return [
    serve(nc, s.queryTools, (body): ToolsAnswer => ({ tools: tools.listings(parseBody(ToolsQuery, body).tenantId) }), { queue: s.engineQueue, onError }),
    serve(nc, s.queryModels, (body): ModelsAnswer => models.listing(parseBody(ModelsQuery, body).tenantId), { queue: s.engineQueue, onError }),
  ];
}

import { z } from 'zod';
import { ENDPOINT_NAME, TOOL_NAME } from './limits';

/**
 * What a tenant can use (docs/design.md §4): the tools its turns are offered
 * now and the model endpoints configured. Engines answer both over NATS
 * (`subjects().queryTools`, `queryModels`, engine queue group); the gateway
 * serves them as `GET /v1/tools` and `GET /v1/models`. No key or header value
 * of an endpoint is ever part of an answer.
 */
const tenantId = z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/);

export const ToolsQuery = z.object({ tenantId }).strict();
export type ToolsQuery = z.infer<typeof ToolsQuery>;

/** `builtin`, `service` (a remote tool over NATS) or `mcp:<server>` (a server of STEERLINE_MCP_CONFIG). */
export const ToolSourceSchema = z.union([z.enum(['builtin', 'service']), z.string().regex(/^mcp:.+$/)]);

export const ToolListingSchema = z
  .object({
    name: z.string().regex(TOOL_NAME),
    description: z.string(),
    /** JSON Schema of the arguments object, as offered to the model. */
    parameters: z.record(z.string(), z.unknown()),
    source: ToolSourceSchema,
    /** Whether a call waits for a person without the turn asking (`approvals`); no tool does today. */
    approval: z.boolean(),
  })
  .strict();
export type ToolListing = z.infer<typeof ToolListingSchema>;
export const ToolsAnswerSchema = z.object({ tools: z.array(ToolListingSchema) }).strict();
export type ToolsAnswer = z.infer<typeof ToolsAnswerSchema>;

export const ModelsQuery = z.object({ tenantId }).strict();
export type ModelsQuery = z.infer<typeof ModelsQuery>;

export const MODEL_PROVIDERS = ['scripted', 'openai', 'anthropic'] as const;

export const ModelEndpointListingSchema = z
  .object({
    /** What a turn's `model.endpoint` names; `default` is the OPENAI_* / ANTHROPIC_* variables. */
    name: z.string().regex(ENDPOINT_NAME),
    provider: z.enum(MODEL_PROVIDERS),
    /** Where requests go (never with credentials in it). Absent for the scripted model. */
    baseURL: z.string().optional(),
  })
  .strict();
export type ModelEndpointListing = z.infer<typeof ModelEndpointListingSchema>;
export const ModelsAnswerSchema = z
  .object({
    /** Every provider a turn may name. */
    providers: z.array(z.enum(MODEL_PROVIDERS)),
    endpoints: z.array(ModelEndpointListingSchema),
  })
  .strict();
export type ModelsAnswer = z.infer<typeof ModelsAnswerSchema>;

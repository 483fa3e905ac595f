import { z } from 'zod';
import { ENDPOINT_NAME } from './limits';

const ToolRequestSchema = z.object({ name: z.string().min(1).max(128), args: z.record(z.string(), z.unknown()).default({}) }).strict();

const delayMs = z.number().int().min(0).max(600_000).optional();

/** One answer of the scripted model (docs/design.md §6.1); `error` makes that model call fail. */
export const ScriptStepSchema = z.union([
  z.object({ tool: ToolRequestSchema, text: z.string().optional(), delayMs }).strict(),
  z.object({ tools: z.array(ToolRequestSchema).min(1).max(64), text: z.string().optional(), delayMs }).strict(),
  z.object({ text: z.string(), delayMs }).strict(),
  z.object({ error: z.string().min(1), delayMs }).strict(),
]);
export type ScriptStep = z.infer<typeof ScriptStepSchema>;

export const ScriptedModelSchema = z
  .object({ provider: z.literal('scripted'), name: z.string().default('scripted'), script: z.array(ScriptStepSchema).max(1000).default([]) })
  .strict();
/** Which configured endpoint of the provider serves the model (STEERLINE_MODELS); absent: `default`. */
const endpoint = z.string().regex(ENDPOINT_NAME, 'an endpoint name (letters, digits, _ and -, at most 64)').optional();
export const OpenAIModelSchema = z.object({ provider: z.literal('openai'), endpoint, name: z.string().min(1).max(200) }).strict();
export const AnthropicModelSchema = z.object({ provider: z.literal('anthropic'), endpoint, name: z.string().min(1).max(200) }).strict();
/** The endpoint a turn without `model.endpoint` runs on: the OPENAI_* / ANTHROPIC_* variables. */
export const DEFAULT_ENDPOINT = 'default';

export const ModelSpecSchema = z.discriminatedUnion('provider', [ScriptedModelSchema, OpenAIModelSchema, AnthropicModelSchema]);
export type ModelSpec = z.infer<typeof ModelSpecSchema>;
/** The scripted model with an empty script. Not what a turn that names no model runs with: that is the engine's STEERLINE_DEFAULT_MODEL. */
export const DEFAULT_MODEL: ModelSpec = { provider: 'scripted', name: 'scripted', script: [] };

export const ToolCallSchema = z.object({ id: z.string().min(1), name: z.string().min(1), args: z.record(z.string(), z.unknown()) }).strict();
export type ToolCall = z.infer<typeof ToolCallSchema>;

export const UsageSchema = z.object({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() }).strict();
export type Usage = z.infer<typeof UsageSchema>;

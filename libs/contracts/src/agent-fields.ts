import { z } from 'zod';
import { SteerlineError } from './errors';
import { AGENT_NAME, InstructionsSchema, ModelSettingsSchema, ToolAllowListSchema, type ModelSettings } from './limits';

/**
 * A turn's agent (docs/design.md §6.1, "A turn's agent"): what the model is told (instructions),
 * how it is sampled (settings), what it may call (tools), and, when the turn
 * named a stored agent, which version of it. The start command takes them,
 * TurnQueued and TurnStarted record them as resolved, so a resumed turn, an
 * audit and a rebuilt record use exactly what the model was given.
 */

/** `"reviewer"` (its latest version) or `"reviewer@3"`. */
export const AgentRefSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}(@[1-9][0-9]{0,8})?$/, 'an agent name, or name@version (letters, digits, _ and -; version from 1)');

/** Which agent version a turn ran, as TurnStarted records it. */
export const AgentVersionSchema = z.object({ name: z.string().regex(AGENT_NAME), version: z.number().int().positive() }).strict();
export type AgentVersion = z.infer<typeof AgentVersionSchema>;

/** `"reviewer@3"` → {name: "reviewer", version: 3}; `"reviewer"` → {name: "reviewer"} (the latest). */
export function parseAgentRef(ref: string): { name: string; version?: number } {
  const at = ref.indexOf('@');
  return at < 0 ? { name: ref } : { name: ref.slice(0, at), version: Number(ref.slice(at + 1)) };
}

/** The fields a start command (HTTP body and NATS) takes beside prompt, model, limits and approvals. */
export const startTurnAgentFields = {
  instructions: InstructionsSchema.optional(),
  settings: ModelSettingsSchema.optional(),
  tools: ToolAllowListSchema.optional(),
  agent: AgentRefSchema.optional(),
};

/**
 * What TurnQueued (v2) and TurnStarted (v3) record: the resolved fields, each
 * absent when the turn had none (no system prompt, the provider's defaults,
 * every tool of the tenant, no stored agent).
 */
export const recordedAgentFields = {
  instructions: InstructionsSchema.optional(),
  settings: ModelSettingsSchema.optional(),
  tools: ToolAllowListSchema.optional(),
  agent: AgentVersionSchema.optional(),
};

/** A turn's agent fields as one value (the engine keeps them together next to model and limits). */
export interface AgentFields {
  instructions?: string;
  settings: ModelSettings;
  /** Absent: every tool of the tenant. */
  tools?: string[];
  agent?: AgentVersion;
}

/** The agent fields of an event's data or a command (`settings` `{}` when it had none). */
export function agentFieldsOf(source: { instructions?: string; settings?: ModelSettings; tools?: string[]; agent?: AgentVersion }): AgentFields {
  return {
    ...(source.instructions !== undefined && { instructions: source.instructions }),
    settings: source.settings ?? {},
    ...(source.tools !== undefined && { tools: source.tools }),
    ...(source.agent !== undefined && { agent: source.agent }),
  };
}

/** What an event records of a turn's agent fields: each one it has (`settings` only when it sets something). */
export function recordedFieldsOf(fields: AgentFields | undefined): Partial<AgentFields> {
  if (!fields) return {};
  const { settings, ...rest } = fields;
  return { ...rest, ...(Object.keys(settings).length > 0 && { settings }) };
}

/**
 * A start command's agent fields as a turn runs with them. Its `agent` must
 * name a version (`reviewer@3`): a start is resolved first (`resolveStartCommand`
 * in agents.ts, by the gateway and again by the engine's commands), which merges
 * the agent's own fields under the turn's and pins the version read.
 */
export function agentFieldsOfStart(command: { instructions?: string; settings?: ModelSettings; tools?: string[]; agent?: string }): AgentFields {
  const ref = command.agent === undefined ? undefined : parseAgentRef(command.agent);
  if (ref && ref.version === undefined) {
    throw new SteerlineError('invalid_request', `agent: ${command.agent} names no version; a turn runs an agent as name@version (resolved from the agent store first)`);
  }
  return agentFieldsOf({ ...command, agent: ref as AgentVersion | undefined });
}

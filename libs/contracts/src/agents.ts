import { z } from 'zod';
import { parseAgentRef, type AgentVersion } from './agent-fields';
import { SteerlineError } from './errors';
import { AGENT_NAME, ApprovalPolicySchema, checkToolChoice, InstructionsSchema, ModelSettingsSchema, ToolAllowListSchema, type ApprovalPolicy, type ModelSettings } from './limits';
import { ModelSpecSchema, type ModelSpec } from './models';

/**
 * Versioned agents (docs/design.md §6.1): a tenant's named definition of a
 * turn's model, instructions, settings, tools and approvals. `POST /v1/agents`
 * makes version 1, `PUT /v1/agents/:name` the next; a version never changes.
 * A turn that names an agent runs one version of it, resolved here, and
 * TurnStarted records which.
 */

export const AGENT_DESCRIPTION_MAX = 1_000;
const agentName = z.string().regex(AGENT_NAME, 'an agent name (letters, digits, _ and -, at most 64)');

const definitionFields = {
  description: z.string().max(AGENT_DESCRIPTION_MAX).optional(),
  instructions: InstructionsSchema.optional(),
  model: ModelSpecSchema,
  settings: ModelSettingsSchema.optional(),
  tools: ToolAllowListSchema.optional(),
  approvals: ApprovalPolicySchema.optional(),
};

/** `POST /v1/agents`: the name and version 1's definition. */
export const CreateAgentBody = z
  .object({ name: agentName, ...definitionFields })
  .strict()
  .superRefine(checkToolChoice);
export type CreateAgentBody = z.infer<typeof CreateAgentBody>;

/** `PUT /v1/agents/:name`: the whole next version (not a patch); the name is the path's. */
export const NextAgentVersionBody = z
  .object(definitionFields)
  .strict()
  .superRefine(checkToolChoice);
export type NextAgentVersionBody = z.infer<typeof NextAgentVersionBody>;

/** One stored version, as every agent route answers it. */
export const AgentSchema = z
  .object({ name: agentName, version: z.number().int().positive(), createdAt: z.iso.datetime(), ...definitionFields })
  .strict();
export type Agent = z.infer<typeof AgentSchema>;

/** `GET /v1/agents`: each agent's latest version, by name. */
export const AgentListSchema = z.object({ agents: z.array(AgentSchema) }).strict();
export type AgentList = z.infer<typeof AgentListSchema>;

/** What a turn itself gives beside its prompt (the start command's own fields). */
export interface TurnOwnFields {
  model?: ModelSpec;
  instructions?: string;
  settings?: ModelSettings;
  tools?: string[];
  approvals?: ApprovalPolicy;
}

/** What the turn runs with once its agent is resolved: what TurnStarted records. */
export interface ResolvedTurnFields extends TurnOwnFields {
  agent?: AgentVersion;
}

/**
 * The one resolution step: an agent version plus the turn's own fields → the
 * fields the turn runs with. Any field the turn gives overrides the agent's;
 * `settings` merge key by key (a turn that sets only `temperature` keeps the
 * agent's `maxOutputTokens`). Pure, and idempotent for a pinned version: the
 * engine resolves a command the gateway already resolved to the same fields.
 * Throws `invalid_request` when the result contradicts itself (a tool choice
 * the resolved allow-list does not allow).
 */
export function resolveAgent(agent: Agent | undefined, turn: TurnOwnFields): ResolvedTurnFields {
  if (!agent) return { ...turn };
  const settings = agent.settings || turn.settings ? { ...agent.settings, ...turn.settings } : undefined;
  const resolved: ResolvedTurnFields = {
    model: turn.model ?? agent.model,
    ...pick('instructions', turn.instructions ?? agent.instructions),
    ...pick('settings', settings),
    ...pick('tools', turn.tools ?? agent.tools),
    ...pick('approvals', turn.approvals ?? agent.approvals),
    agent: { name: agent.name, version: agent.version },
  };
  const checked = z.object({ settings: ModelSettingsSchema.optional(), tools: ToolAllowListSchema.optional() }).superRefine(checkToolChoice).safeParse(resolved);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new SteerlineError('invalid_request', `${issue.path.join('.')}: ${issue.message} (agent ${agent.name}@${agent.version})`);
  }
  return resolved;
}

/** The agent a turn names (`"reviewer"` or `"reviewer@3"`), read by `read`; `not_found` when there is no such agent or version. */
export async function agentOfTurn(ref: string | undefined, read: (name: string, version?: number) => Promise<Agent | undefined>): Promise<Agent | undefined> {
  if (ref === undefined) return undefined;
  const { name, version } = parseAgentRef(ref);
  const agent = await read(name, version);
  if (!agent) throw agentNotFound(name, version);
  return agent;
}

/**
 * A start command with its agent resolved into its fields and pinned to the
 * version read (`reviewer` → `reviewer@3`), so that resolving it again (the
 * gateway resolves, then the engine) gives the same fields. A command without
 * an agent comes back as it is. The gateway does this before it sends a start;
 * the engine does it for a start sent straight over NATS.
 */
export async function resolveStartCommand<C extends TurnOwnFields & { tenantId: string; agent?: string }>(
  command: C,
  read: (tenantId: string, name: string, version?: number) => Promise<Agent | undefined>,
): Promise<C> {
  if (command.agent === undefined) return command;
  const agent = (await agentOfTurn(command.agent, (name, version) => read(command.tenantId, name, version)))!;
  const { agent: _version, ...fields } = resolveAgent(agent, command);
  return { ...command, ...fields, agent: `${agent.name}@${agent.version}` };
}

export function agentNotFound(name: string, version?: number): SteerlineError {
  return new SteerlineError('not_found', version === undefined ? `agent ${name} not found` : `agent ${name} has no version ${version}`, { agent: name, ...(version !== undefined && { version }) });
}

function pick<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

import { z } from 'zod';

/** Per-turn limits (docs/design.md §6.3): defaults and the ranges a turn may choose within. */
export const LIMITS = {
  maxQueued: { default: 5, min: 1, max: 1000 },
  maxContinuations: { default: 10, min: 0, max: 100 },
  maxSteps: { default: 50, min: 1, max: 1000 },
} as const;

export const STEER_TEXT_MAX = 4000;
export const PROMPT_MAX = 100_000;
/** Largest command or HTTP body accepted, in bytes. */
export const BODY_MAX_BYTES = 256 * 1024;
/**
 * Default bound on one tool output or one model answer, in UTF-8 bytes
 * (`STEERLINE_MAX_OUTPUT_BYTES`). A quarter of NATS's default 1 MiB
 * `max_payload`: the event that carries it (ToolCallFinished, ModelResponded,
 * TurnCompleted) and a turn's read model (prompt up to BODY_MAX_BYTES plus the
 * answer) stay below the limit with room for the envelope, and 256 KiB
 * (~64 000 tokens) is still something a model can read.
 */
export const MAX_OUTPUT_BYTES_DEFAULT = 256 * 1024;
/** Kept free of every reply page and bounded output for the envelope (ids, field names, headers). */
export const ENVELOPE_ROOM_BYTES = 16 * 1024;
/**
 * Most items (turns, messages or steers) one conversation query page reads
 * from the database; a page also stops at the reply's byte budget
 * (`max_payload` minus ENVELOPE_ROOM_BYTES).
 */
export const CONVERSATION_PAGE_ITEMS = 1000;
/** Longest `Prefer: wait` honoured, in seconds. */
export const WAIT_MAX_SECONDS = 60;

const limit = (name: keyof typeof LIMITS) =>
  z.number().int().min(LIMITS[name].min).max(LIMITS[name].max).default(LIMITS[name].default);

export const TurnLimitsSchema = z
  .object({
    maxQueued: limit('maxQueued'),
    maxContinuations: limit('maxContinuations'),
    maxSteps: limit('maxSteps'),
  })
  .strict();
export type TurnLimits = z.infer<typeof TurnLimitsSchema>;

export const DEFAULT_LIMITS: TurnLimits = TurnLimitsSchema.parse({});

/** A steer's `ttlMs` (docs/design.md §8.3). */
export const STEER_TTL_MS = { min: 1_000, max: 3_600_000 } as const;
/** Turns a conversation may hold queued behind its running one. */
export const MAX_QUEUED_TURNS = 10;

/** Tool-call approvals (docs/design.md §8.2): which tools wait for a person, and for how long at most. */
export const APPROVALS = { maxTools: 100, nameMax: 64, timeoutMs: { min: 1_000, max: 86_400_000 } } as const;

export const ApprovalPolicySchema = z
  .object({
    /** `["*"]` asks for every tool; otherwise the tool names that wait. */
    tools: z.array(z.string().min(1).max(APPROVALS.nameMax)).min(1).max(APPROVALS.maxTools),
    /** Without it a call waits until a person decides or the turn ends. */
    timeoutMs: z.number().int().min(APPROVALS.timeoutMs.min).max(APPROVALS.timeoutMs.max).optional(),
  })
  .strict();
export type ApprovalPolicy = z.infer<typeof ApprovalPolicySchema>;

/** Whether a call of `tool` must wait for a decision under `policy`. */
export function needsApproval(policy: ApprovalPolicy | undefined, tool: string): boolean {
  return !!policy && (policy.tools.includes('*') || policy.tools.includes(tool));
}

/**
 * A turn's agent fields (docs/design.md §6.1, "A turn's agent"): its instructions (the system
 * prompt), its model settings and the tools it may call. Written once here;
 * the HTTP body, the NATS start command, TurnQueued/TurnStarted and an agent
 * definition all use these schemas.
 */
export const AGENT_FIELDS = {
  instructionsMax: 100_000,
  temperature: { min: 0, max: 2 },
  topP: { min: 0, max: 1 },
  maxOutputTokens: { min: 1, max: 128_000 },
  stopMax: 4,
  stopLengthMax: 256,
  toolsMax: 256,
} as const;

/** A tool name: a NATS subject token and a valid OpenAI/Anthropic function name. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** A tool allow-list entry: a tool name, or a prefix ending in `*` (`mcp__files__*`; `*` alone: every tool). */
export const TOOL_PATTERN = /^(?:[A-Za-z0-9_-]{1,64}\*?|\*)$/;
/** A named model endpoint (STEERLINE_MODELS) or an agent's name. */
export const ENDPOINT_NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const AGENT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const InstructionsSchema = z.string().min(1).max(AGENT_FIELDS.instructionsMax);

export const ToolChoiceSchema = z.union([
  z.enum(['auto', 'required', 'none']),
  /** This one tool, and no other, must be called. */
  z.object({ name: z.string().regex(TOOL_NAME, 'a tool name (letters, digits, _ and -, at most 64)') }).strict(),
]);
export type ToolChoice = z.infer<typeof ToolChoiceSchema>;

const range = (r: { min: number; max: number }) => z.number().min(r.min).max(r.max);
export const ModelSettingsSchema = z
  .object({
    temperature: range(AGENT_FIELDS.temperature).optional(),
    topP: range(AGENT_FIELDS.topP).optional(),
    maxOutputTokens: range(AGENT_FIELDS.maxOutputTokens).int().optional(),
    toolChoice: ToolChoiceSchema.optional(),
    parallelToolCalls: z.boolean().optional(),
    stop: z.array(z.string().min(1).max(AGENT_FIELDS.stopLengthMax)).max(AGENT_FIELDS.stopMax).optional(),
    seed: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .strict();
export type ModelSettings = z.infer<typeof ModelSettingsSchema>;

/** Absent: every tool of the tenant. `[]`: none. */
export const ToolAllowListSchema = z
  .array(z.string().regex(TOOL_PATTERN, 'a tool name or a prefix ending in * (letters, digits, _ and -)'))
  .max(AGENT_FIELDS.toolsMax);

/** Whether `tools` (a turn's allow-list; undefined: everything) lets the turn call `name`. */
export function toolAllowed(tools: readonly string[] | undefined, name: string): boolean {
  if (!tools) return true;
  return tools.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : p === name));
}

/**
 * Refuses a tool choice the allow-list contradicts: a named tool the list
 * does not allow, or `required` with no tool allowed at all. For a
 * `superRefine` over an object holding both fields.
 */
export function checkToolChoice(fields: { settings?: ModelSettings; tools?: readonly string[] }, ctx: z.RefinementCtx): void {
  const choice = fields.settings?.toolChoice;
  if (typeof choice === 'object' && !toolAllowed(fields.tools, choice.name)) {
    ctx.addIssue({ code: 'custom', path: ['settings', 'toolChoice', 'name'], message: `tool ${choice.name} is not allowed by this turn's tools` });
  }
  if (choice === 'required' && fields.tools?.length === 0) {
    ctx.addIssue({ code: 'custom', path: ['settings', 'toolChoice'], message: '"required" needs at least one allowed tool' });
  }
}

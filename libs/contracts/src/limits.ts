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

/** A steer's `ttlMs` (docs/design.md §2, "Expiry"). */
export const STEER_TTL_MS = { min: 1_000, max: 3_600_000 } as const;
/** Turns a conversation may hold queued behind its running one. */
export const MAX_QUEUED_TURNS = 10;

/** Tool-call approvals (docs/design.md §9): which tools wait for a person, and for how long at most. */
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

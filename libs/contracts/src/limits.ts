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

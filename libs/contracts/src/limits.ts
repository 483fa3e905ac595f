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

import { z } from 'zod';
import { ApprovalPolicySchema, LIMITS, ModelSpecSchema, PROMPT_MAX, TURN_RUNNERS } from '@steerline/contracts';

// Unlike the contract's TurnLimitsSchema this fills in no defaults: the limits
// a client leaves out stay out, and the engine applies its own defaults.
const limit = (name: keyof typeof LIMITS) => z.number().int().min(LIMITS[name].min).max(LIMITS[name].max).optional();
const TurnLimitsBody = z.object({ maxQueued: limit('maxQueued'), maxContinuations: limit('maxContinuations'), maxSteps: limit('maxSteps') }).strict();

export const StartTurnBody = z
  .object({
    prompt: z.string().min(1).max(PROMPT_MAX),
    model: ModelSpecSchema.optional(),
    limits: TurnLimitsBody.optional(),
    approvals: ApprovalPolicySchema.optional(),
    whenBusy: z.enum(['reject', 'queue']).optional(),
    /** `external`: the caller runs the turn's loop (docs/runner-protocol.md); the answer carries its lease. */
    runner: z.enum(TURN_RUNNERS).optional(),
  })
  .strict();
export type StartTurnBody = z.infer<typeof StartTurnBody>;

export const CancelTurnBody = z.object({ reason: z.string().max(500).optional() }).strict();
export type CancelTurnBody = z.infer<typeof CancelTurnBody>;

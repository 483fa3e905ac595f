import { z } from 'zod';

/**
 * Live output (docs/design.md §11): messages on core NATS subject
 * `<prefix>.live.<tenantId>.<conversationId>`, never stored in the log. They
 * show a turn at work; the facts are still the events (a step's deltas joined
 * are the text its ModelResponded records). Missed ones are not replayed.
 */
export const ModelDeltaSchema = z.object({
  type: z.literal('ModelDelta'),
  turnId: z.string().min(1),
  step: z.number().int().min(1),
  /** Gapless per step from 0. */
  index: z.number().int().min(0),
  text: z.string(),
});
export type ModelDelta = z.infer<typeof ModelDeltaSchema>;

export const ToolProgressSchema = z.object({
  type: z.literal('ToolProgress'),
  turnId: z.string().min(1),
  step: z.number().int().min(1),
  toolCallId: z.string().min(1),
  /** Done so far, 0..1, when the tool knows. */
  progress: z.number().min(0).max(1).optional(),
  message: z.string().max(1_000).optional(),
});
export type ToolProgress = z.infer<typeof ToolProgressSchema>;

export const LiveMessageSchema = z.discriminatedUnion('type', [ModelDeltaSchema, ToolProgressSchema]);
export type LiveMessage = z.infer<typeof LiveMessageSchema>;
export const LIVE_TYPES = ['ModelDelta', 'ToolProgress'] as const;

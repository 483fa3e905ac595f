import { z } from 'zod';
import { BOUNDARIES, DROP_REASONS } from './events';
import { ERROR_CODES } from './errors';
import { ApprovalAnswerSchema, ConversationCursorSchema, ReceiptSchema, StartTurnAnswerSchema, STEER_STATUSES, TURN_STATUSES, type Reply } from './commands';
import { ConversationListPageSchema } from './conversation-list';
import { ModelsAnswerSchema, ToolsAnswerSchema } from './discovery';
import { TurnLimitsSchema } from './limits';
import { ModelSpecSchema, ToolCallSchema } from './models';
import { LeaseAnswerSchema, PublishLiveAnswerSchema, RunnerApprovalAnswerSchema, RunnerNextSchema } from './runner';
import type { ChatMessage } from './transcript';
import type { ConversationPage, ConversationView, SteerView, TurnView } from './views';

/**
 * Schemas of the request/reply answers (docs/design.md §4), for the AsyncAPI document
 * and for services in other languages. The TypeScript types in views.ts and
 * transcript.ts stay the source; the checks at the bottom fail the type-check
 * when the two drift apart.
 */
const uuid = z.uuid();
const at = z.iso.datetime();

export const ErrorBodySchema = z.looseObject({ code: z.enum(ERROR_CODES), message: z.string() });

const ChatMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('user'), content: z.string(), turnId: z.string(), steerId: z.string().optional() }),
  z.object({ role: z.literal('assistant'), content: z.string(), turnId: z.string(), step: z.number().int(), toolCalls: z.array(ToolCallSchema).optional() }),
  z.object({ role: z.literal('tool'), content: z.string(), turnId: z.string(), step: z.number().int(), toolCallId: z.string() }),
]);

export const SteerViewSchema = z.object({
  id: uuid,
  turnId: uuid,
  text: z.string(),
  position: z.number().int().positive(),
  status: z.enum(STEER_STATUSES),
  reason: z.enum(DROP_REASONS).optional(),
  step: z.number().int().positive().optional(),
  boundary: z.enum(BOUNDARIES).optional(),
  requestStep: z.number().int().positive().optional(),
  nextTurnId: uuid.optional(),
  queuedAt: at,
  settledAt: at.optional(),
});

const turnFields = {
  id: uuid,
  status: z.enum(TURN_STATUSES),
  steps: z.number().int().nonnegative(),
  prompt: z.string(),
  model: ModelSpecSchema,
  limits: TurnLimitsSchema,
  text: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  cancelReason: z.string().optional(),
  resumes: z.number().int().nonnegative().default(0),
  startedAt: at,
  endedAt: at.optional(),
};

export const PendingApprovalSchema = z.object({
  toolCallId: z.string(),
  step: z.number().int().positive(),
  name: z.string(),
  args: z.record(z.string(), z.unknown()),
  requestedAt: at,
});

export const TurnViewSchema = z.object({
  ...turnFields,
  conversationId: uuid,
  steers: z.object({ queued: z.number().int().nonnegative(), delivered: z.number().int().nonnegative(), dropped: z.number().int().nonnegative() }),
  pendingApprovals: z.array(PendingApprovalSchema),
});

export const ConversationViewSchema = z.object({
  id: uuid,
  createdAt: at,
  turns: z.union([z.array(z.object(turnFields)), z.array(TurnViewSchema)]),
  messages: z.array(ChatMessageSchema),
  steers: z.array(SteerViewSchema),
});

export const ConversationPageSchema = ConversationViewSchema.extend({ next: ConversationCursorSchema.optional() });

export const HealthReplySchema = z.object({
  database: z.boolean(),
  checkpoint: z.number().int().nullable(),
  lastSeq: z.number().int().nullable(),
  lag: z.number().int().nullable(),
});

/** Every answer is `{ok: true, data}` or `{ok: false, error}` (see `Reply`). */
export function replySchema<T extends z.ZodType>(data: T) {
  return z.union([z.object({ ok: z.literal(true), data }), z.object({ ok: z.literal(false), error: ErrorBodySchema })]);
}

/** The data each request subject answers with. */
export const ReplyDataSchemas = {
  createConversation: z.object({ id: uuid }),
  startTurn: StartTurnAnswerSchema,
  steer: ReceiptSchema,
  withdraw: ReceiptSchema,
  cancel: z.object({ accepted: z.literal(true) }),
  decideApproval: ApprovalAnswerSchema,
  queryConversation: ConversationPageSchema,
  queryConversations: ConversationListPageSchema,
  queryTurn: TurnViewSchema,
  querySteer: ReceiptSchema,
  queryHealth: HealthReplySchema,
  queryTools: ToolsAnswerSchema,
  queryModels: ModelsAnswerSchema,
  runnerAnswer: RunnerNextSchema,
  runnerResults: RunnerNextSchema,
  runnerFail: RunnerNextSchema,
  runnerLease: LeaseAnswerSchema,
  runnerApproval: RunnerApprovalAnswerSchema,
  runnerLive: PublishLiveAnswerSchema,
  runnerInterrupted: RunnerNextSchema,
} as const;

// Compile-time drift checks: each schema's type and the hand-written type must match both ways.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const drift: [
  Same<z.infer<typeof SteerViewSchema>, SteerView>,
  Same<z.infer<typeof TurnViewSchema>, TurnView>,
  Same<z.infer<typeof ConversationViewSchema>, ConversationView>,
  Same<z.infer<typeof ConversationPageSchema>, ConversationPage>,
  Same<z.infer<typeof ChatMessageSchema>, ChatMessage>,
  Same<z.infer<ReturnType<typeof replySchema<typeof ReceiptSchema>>>, Reply<z.infer<typeof ReceiptSchema>>>,
] = [true, true, true, true, true, true];
void drift;

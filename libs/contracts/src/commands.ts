import { z } from 'zod';
import { APPROVAL_DECIDERS, APPROVAL_DECISIONS, BOUNDARIES, DROP_REASONS, ON_TURN_END, STEER_URGENCIES } from './events';
import { SteerlineError, type ErrorBody } from './errors';
import { startTurnAgentFields } from './agent-fields';
import { ApprovalPolicySchema, PROMPT_MAX, STEER_TEXT_MAX, STEER_TTL_MS, TurnLimitsSchema, checkToolChoice } from './limits';
import { ModelSpecSchema } from './models';
import { RunnerLeaseSchema, TURN_RUNNERS } from './runner';

// Control characters other than tab, newline and carriage return are refused:
// they are never guidance, and some terminals and models mis-read them.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Trims a steer's text and checks it (docs/design.md §2.13); throws `invalid_request`. */
export function normalizeSteerText(text: unknown): string {
  if (typeof text !== 'string') throw new SteerlineError('invalid_request', 'text must be a string');
  const trimmed = text.trim();
  if (trimmed.length === 0) throw new SteerlineError('invalid_request', 'text is empty after trimming');
  if (trimmed.length > STEER_TEXT_MAX) throw new SteerlineError('invalid_request', `text is longer than ${STEER_TEXT_MAX} characters`);
  if (CONTROL.test(trimmed)) throw new SteerlineError('invalid_request', 'text contains control characters');
  return trimmed;
}

const tenantId = z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/);
const uuid = z.uuid();
const steerText = z.string().max(STEER_TEXT_MAX * 4);

export const CreateConversationCommand = z.object({ tenantId, conversationId: uuid.optional() }).strict();
export const StartTurnCommand = z
  .object({
    tenantId,
    conversationId: uuid,
    turnId: uuid.optional(),
    prompt: z.string().min(1).max(PROMPT_MAX),
    model: ModelSpecSchema.optional(),
    limits: TurnLimitsSchema.partial().strict().optional(),
    approvals: ApprovalPolicySchema.optional(),
    /** `queue`: while another turn runs, queue this one behind it instead of answering turn_already_running. */
    whenBusy: z.enum(['reject', 'queue']).optional(),
    /** instructions, settings, tools, agent (docs/design.md §6.1, "A turn's agent"). */
    ...startTurnAgentFields,
    /** `external`: the process that starts the turn runs its loop, holding the lease the answer carries (docs/runner-protocol.md). */
    runner: z.enum(TURN_RUNNERS).optional(),
  })
  .strict()
  .superRefine(checkToolChoice);
/** The answer to a start: running at once, or queued at `position`. */
export const StartTurnAnswerSchema = z
  .object({
    turnId: uuid,
    status: z.enum(['running', 'queued']).optional(),
    position: z.number().int().positive().optional(),
    /** An external turn's runner lease: only its holder may report for the turn. */
    lease: RunnerLeaseSchema.optional(),
  })
  .strict();
export type StartTurnAnswer = z.infer<typeof StartTurnAnswerSchema>;
/** A steer's own lifecycle (docs/design.md §2, "Steer options"), on both steer routes. */
export const steerLifecycle = {
  onTurnEnd: z.enum(ON_TURN_END).optional(),
  ttlMs: z.number().int().min(STEER_TTL_MS.min).max(STEER_TTL_MS.max).optional(),
  /** `interrupt`: stop what the turn is doing and deliver now (docs/design.md §2, "Urgency"); default `next_boundary`. */
  urgency: z.enum(STEER_URGENCIES).optional(),
};
export const SubmitSteerCommand = z.object({ tenantId, text: steerText, steerId: uuid.optional(), ...steerLifecycle }).strict();
export const SubmitConversationSteerCommand = z
  .object({ tenantId, text: steerText, steerId: uuid.optional(), expectedTurnId: uuid.optional(), ...steerLifecycle })
  .strict();
export const EditSteerCommand = z.object({ tenantId, steerId: uuid, text: steerText }).strict();
export const WithdrawSteerCommand = z.object({ tenantId, steerId: uuid }).strict();
export const APPROVAL_VERDICTS = ['approve', 'deny'] as const;
export const DecideApprovalCommand = z
  .object({ tenantId, toolCallId: z.string().min(1).max(256), decision: z.enum(APPROVAL_VERDICTS), reason: z.string().max(500).optional() })
  .strict();
/** The answer to a decision, the first one and every same one after it. */
export const ApprovalAnswerSchema = z
  .object({ toolCallId: z.string(), decision: z.enum(APPROVAL_DECISIONS), reason: z.string().optional(), by: z.enum(APPROVAL_DECIDERS) })
  .strict();
export type ApprovalAnswer = z.infer<typeof ApprovalAnswerSchema>;
export const CancelTurnCommand = z.object({ tenantId, reason: z.string().max(500).optional() }).strict();

export const CONVERSATION_SECTIONS = ['turns', 'messages', 'steers'] as const;
export type ConversationSection = (typeof CONVERSATION_SECTIONS)[number];
/** Where a paged conversation read goes on: a section and an offset in it (for messages: the ordinal). */
export const ConversationCursorSchema = z.object({ section: z.enum(CONVERSATION_SECTIONS), offset: z.number().int().nonnegative() }).strict();
export type ConversationCursor = z.infer<typeof ConversationCursorSchema>;

/**
 * A header of every `qry.conversation` page reply (its JSON body unchanged): the page's
 * `id`, `createdAt` and `next` cursor, and where each section's items lie in the body —
 * byte ranges `[start, end)` of the text between that section array's brackets (absent
 * for an empty section). A reader that only forwards the items (the gateway's
 * `GET /v1/conversations/:cid`) copies those bytes instead of parsing and encoding them again.
 */
export const CONVERSATION_PAGE_HEADER = 'Steerline-Page';
/**
 * A header of every laid-out `qry.conversation` page reply: the subject of the persistence
 * instance that answered it (`queryConversationAt`). The read's next page asked there comes from
 * that instance, which then reads the page after it ahead while this one crosses (docs/design.md §14).
 */
export const CONVERSATION_PAGE_AT_HEADER = 'Steerline-Page-At';
/**
 * A header of a `qry.conversation` request: its reader asks the next page at the subject the reply
 * names (CONVERSATION_PAGE_AT_HEADER), so the instance answering reads that page ahead at once.
 */
export const CONVERSATION_READ_AHEAD_HEADER = 'Steerline-Read-Ahead';
export interface ConversationPageLayout {
  id: string;
  createdAt: string;
  next?: ConversationCursor;
  sections: Partial<Record<ConversationSection, [number, number]>>;
}

export const ConversationQuery = z
  .object({
    tenantId,
    conversationId: uuid,
    afterMessage: z.number().int().nonnegative().optional(),
    limit: z.number().int().min(1).max(10_000).optional(),
    /** Continue a paged read at the `next` cursor of the previous page. */
    from: ConversationCursorSchema.optional(),
  })
  .strict();
export const TurnQuery = z.object({ tenantId, turnId: uuid }).strict();
export const SteerQuery = z.object({ tenantId, turnId: uuid, steerId: uuid }).strict();

export type CreateConversationCommand = z.infer<typeof CreateConversationCommand>;
export type StartTurnCommand = z.infer<typeof StartTurnCommand>;
export type SubmitSteerCommand = z.infer<typeof SubmitSteerCommand>;
export type SubmitConversationSteerCommand = z.infer<typeof SubmitConversationSteerCommand>;
export type WithdrawSteerCommand = z.infer<typeof WithdrawSteerCommand>;
export type EditSteerCommand = z.infer<typeof EditSteerCommand>;
export type DecideApprovalCommand = z.infer<typeof DecideApprovalCommand>;
export type CancelTurnCommand = z.infer<typeof CancelTurnCommand>;
export type ConversationQuery = z.infer<typeof ConversationQuery>;
export type TurnQuery = z.infer<typeof TurnQuery>;
export type SteerQuery = z.infer<typeof SteerQuery>;

export const STEER_STATUSES = ['queued', 'delivered', 'dropped'] as const;
export type SteerStatus = (typeof STEER_STATUSES)[number];

/** What a client learns about one steer, on every path (docs/design.md §5). */
export const ReceiptSchema = z
  .object({
    steerId: uuid,
    turnId: uuid,
    status: z.enum(STEER_STATUSES),
    position: z.number().int().positive(),
    text: z.string(),
    step: z.number().int().positive().optional(),
    boundary: z.enum(BOUNDARIES).optional(),
    requestStep: z.number().int().positive().optional(),
    reason: z.enum(DROP_REASONS).optional(),
    /** A steer moved to the next turn: that turn's id. */
    nextTurnId: uuid.optional(),
    /** Present for an urgent steer (`interrupt`); absent: `next_boundary`. */
    urgency: z.literal('interrupt').optional(),
    /** An urgent steer waits for these running calls, which declare themselves non-interruptible. */
    waitingFor: z.array(z.string()).optional(),
  })
  .strict();
export type Receipt = z.infer<typeof ReceiptSchema>;

export const TURN_STATUSES = ['queued', 'running', 'completed', 'cancelled', 'failed'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

/** Every request/reply answer: the data, or a typed error. */
export type Reply<T> = { ok: true; data: T } | { ok: false; error: ErrorBody };

export function okReply<T>(data: T): Reply<T> {
  return { ok: true, data };
}

export function errorReply(err: unknown): Reply<never> {
  if (err instanceof SteerlineError) return { ok: false, error: err.toBody() };
  if (err instanceof z.ZodError) return { ok: false, error: { code: 'invalid_request', message: describeZodError(err) } };
  return { ok: false, error: { code: 'internal', message: 'internal error' } };
}

export function unwrapReply<T>(reply: Reply<T>): T {
  if (reply.ok) return reply.data;
  throw SteerlineError.fromBody(reply.error);
}

export function describeZodError(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`).join('; ');
}

/** Parses a command or query body, turning schema failures into `invalid_request`. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new SteerlineError('invalid_request', describeZodError(parsed.error));
  return parsed.data;
}

import { z } from 'zod';
import { APPROVAL_DECIDERS, APPROVAL_DECISIONS } from './events';
import { ToolCallSchema, UsageSchema } from './models';

/*
 * External turns (docs/runner-protocol.md): a turn whose loop another process
 * runs. That process, the runner, holds a lease and reports facts; the engine
 * decides with the same decider as for its own turns and answers what comes
 * next. Every request here names the runner's lease token; only its holder may
 * report.
 */

/** Who runs a turn's loop: the engine (default) or the process that started it. */
export const TURN_RUNNERS = ['engine', 'external'] as const;
export type TurnRunnerKind = (typeof TURN_RUNNERS)[number];

/** How long a runner's lease lasts without a renewal (STEERLINE_RUNNER_LEASE_MS). */
export const RUNNER_LEASE_MS = { default: 15_000, min: 1_000, max: 600_000 } as const;
/** Longest a lease renewal or an approval wait is held open by the engine (a long poll). */
export const RUNNER_WAIT_MS_MAX = 30_000;
/** Live messages in one publish; a runner batches its deltas. */
export const RUNNER_LIVE_BATCH_MAX = 256;
/** A runner's failure code: a lower-case token, like the contract's own. */
export const RUNNER_FAIL_CODE = /^[a-z0-9_]{1,64}$/;
/** What TurnStarted records as an external turn's model when the runner names none: Steerline never calls it. */
export const EXTERNAL_MODEL = { provider: 'openai', name: 'external' } as const;
/** The code of the TurnFailed that ends a turn whose runner's lease lapsed. */
export const RUNNER_LOST = 'runner_lost';

const tenantId = z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/);
const step = z.number().int().positive();
/** The lease token the start answered with: 43 base64url characters (256 random bits). */
const lease = z.string().min(16).max(128).regex(/^[A-Za-z0-9_-]+$/);
const toolCallId = z.string().min(1).max(256);
const waitMs = z.number().int().min(0).max(RUNNER_WAIT_MS_MAX).optional();

/** What a start of an external turn answers besides the turn's id. */
export const RunnerLeaseSchema = z.object({ token: lease, leaseMs: z.number().int().positive() }).strict();
export type RunnerLease = z.infer<typeof RunnerLeaseSchema>;

/** A call id the approval routes can name (printable ASCII, 1–256), once per answer. */
const TOOL_CALL_ID = /^[\x21-\x7e]{1,256}$/;
const answerCalls = z
  .array(ToolCallSchema)
  .max(64)
  .refine((calls) => calls.every((c) => TOOL_CALL_ID.test(c.id)), 'a tool call id is 1–256 printable ASCII characters')
  .refine((calls) => new Set(calls.map((c) => c.id)).size === calls.length, 'the tool call ids of an answer are unique');

/** After each model answer: its text, its tool calls and its usage. */
export const ReportAnswerCommand = z.object({ tenantId, lease, step, text: z.string(), toolCalls: answerCalls, usage: UsageSchema.optional() }).strict();
export type ReportAnswerCommand = z.infer<typeof ReportAnswerCommand>;

/** One tool call's result, as the runner ran it. `fatal`: the work cannot go on; the turn fails. */
export const RunnerToolResultSchema = z
  .object({
    toolCallId,
    ok: z.boolean(),
    output: z.unknown().optional(),
    error: z.object({ code: z.string().min(1).max(64), message: z.string().max(10_000) }).strict().optional(),
    fatal: z.boolean().optional(),
    durationMs: z.number().nonnegative().optional(),
  })
  .strict();
export type RunnerToolResult = z.infer<typeof RunnerToolResultSchema>;

/** Before model request `step + 1`: step `step`'s tool results (all, some, or none: an empty report asks what comes next, e.g. after every call was denied). */
export const ReportResultsCommand = z.object({ tenantId, lease, step, results: z.array(RunnerToolResultSchema).max(64) }).strict();
export type ReportResultsCommand = z.infer<typeof ReportResultsCommand>;

export const RunnerFailCommand = z.object({ tenantId, lease, code: z.string().regex(RUNNER_FAIL_CODE), message: z.string().min(1).max(2_000) }).strict();
export type RunnerFailCommand = z.infer<typeof RunnerFailCommand>;

/**
 * Renews the lease. With `waitMs`, answered when the turn ends (a cancel), when an
 * urgent steer asks the runner to cut a step it has not heard of yet
 * (`interruptSeen`: the step of the last cut it was told of), or after waitMs: a long poll.
 */
export const RenewLeaseCommand = z.object({ tenantId, lease, waitMs, interruptSeen: step.optional() }).strict();
export type RenewLeaseCommand = z.infer<typeof RenewLeaseCommand>;

/**
 * The runner stopped step `step` because an urgent steer asked it to (docs/runner-protocol.md,
 * "Interrupts"): `partialText`, what the model had written when its answer was cut (an answer
 * not reported yet); `results`, the step's calls that finished before the cut. Every other
 * unfinished call of the step ends `interrupted`.
 */
export const ReportInterruptedCommand = z
  .object({ tenantId, lease, step, partialText: z.string().optional(), usage: UsageSchema.optional(), results: z.array(RunnerToolResultSchema).max(64).optional() })
  .strict();
export type ReportInterruptedCommand = z.infer<typeof ReportInterruptedCommand>;

/** Waits up to `waitMs` for the decision on a call that asked for approval. */
export const AwaitApprovalCommand = z.object({ tenantId, lease, toolCallId, waitMs }).strict();
export type AwaitApprovalCommand = z.infer<typeof AwaitApprovalCommand>;

/** Live output the runner publishes: the engine gives deltas their index, as for its own turns. */
export const RunnerLiveMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ModelDelta'), step, text: z.string().max(64_000) }).strict(),
  z.object({ type: z.literal('ToolProgress'), step, toolCallId, progress: z.number().min(0).max(1).optional(), message: z.string().max(1_000).optional() }).strict(),
]);
export type RunnerLiveMessage = z.infer<typeof RunnerLiveMessageSchema>;
export const PublishLiveCommand = z.object({ tenantId, lease, messages: z.array(RunnerLiveMessageSchema).min(1).max(RUNNER_LIVE_BATCH_MAX) }).strict();
export type PublishLiveCommand = z.infer<typeof PublishLiveCommand>;

/** A steer delivered into the runner's next model request: add `rendered` as a user message, in this order. */
export const DeliveredSteerSchema = z.object({ steerId: z.uuid(), text: z.string(), rendered: z.string(), position: z.number().int().positive() }).strict();
export type DeliveredSteer = z.infer<typeof DeliveredSteerSchema>;

/** A call of the answer: `approval: "pending"` must wait for the decision before it runs. */
export const RunnerCallSchema = z
  .object({ toolCallId, name: z.string(), approval: z.enum(['none', 'pending', 'approved', 'denied']), finished: z.boolean() })
  .strict();
export type RunnerCall = z.infer<typeof RunnerCallSchema>;

/** The urgent steer that asks the runner to stop step `step` now: abort it, then report `interrupted`. */
export const RunnerInterruptSchema = z.object({ step }).strict();

/** A call's result as Steerline recorded it: what the model reads for it next. */
export const RunnerRecordedResultSchema = z
  .object({ toolCallId, name: z.string(), ok: z.boolean(), output: z.unknown().optional(), error: z.object({ code: z.string(), message: z.string() }).strict().optional() })
  .strict();
export type RunnerRecordedResult = z.infer<typeof RunnerRecordedResultSchema>;

/**
 * The step an urgent steer cut, as the next request presents it: `text`, the
 * assistant message of a cut answer (its partial text and the interrupted
 * note, absent when nothing was written); `results`, every call of a cut tool
 * step as recorded (the interrupted ones with their `interrupted` error).
 */
export const RunnerCutSchema = z.object({ step, text: z.string().optional(), results: z.array(RunnerRecordedResultSchema) }).strict();
export type RunnerCut = z.infer<typeof RunnerCutSchema>;

/** The ended ones of commands.ts's TURN_STATUSES (commands.ts imports this file, so they are not read from there). */
const ended = z.enum(['completed', 'cancelled', 'failed']);

/**
 * What the runner does next, answered to every report:
 * - `model`: send model request `step`, after adding `steers` (possibly none) to the messages — and, when
 *   an urgent steer cut the step before (`cut`), what the cut left of it first;
 * - `tools`: run the calls of step `step` not `finished` (a `pending` one after its approval), then report
 *   them; with `interrupt`, an urgent steer asks to stop them instead (report `interrupted`);
 * - `end`: the turn is over (`status`, and the failure or the cancel's reason); stop.
 */
export const RunnerNextSchema = z.discriminatedUnion('next', [
  z.object({ next: z.literal('model'), step, steers: z.array(DeliveredSteerSchema), cut: RunnerCutSchema.optional() }).strict(),
  z.object({ next: z.literal('tools'), step, calls: z.array(RunnerCallSchema), interrupt: RunnerInterruptSchema.optional() }).strict(),
  z
    .object({ next: z.literal('end'), status: ended, error: z.object({ code: z.string(), message: z.string() }).strict().optional(), reason: z.string().optional() })
    .strict(),
]);
export type RunnerNext = z.infer<typeof RunnerNextSchema>;

/**
 * A renewal's answer: the lease runs `leaseMs` from the renewal; `turn` ended (a cancel, for one) once it
 * is `end`; `interrupt`, an urgent steer asks the runner to stop step `interrupt.step` now.
 */
export const LeaseAnswerSchema = z
  .object({ leaseMs: z.number().int().positive(), turn: z.union([z.object({ next: z.literal('running') }).strict(), RunnerNextSchema.options[2]]), interrupt: RunnerInterruptSchema.optional() })
  .strict();
export type LeaseAnswer = z.infer<typeof LeaseAnswerSchema>;

/** A wait for a decision: still `pending` when the wait ended first. */
export const RunnerApprovalAnswerSchema = z
  .object({ toolCallId: z.string(), decision: z.enum([...APPROVAL_DECISIONS, 'pending']), reason: z.string().optional(), by: z.enum(APPROVAL_DECIDERS).optional() })
  .strict();
export type RunnerApprovalAnswer = z.infer<typeof RunnerApprovalAnswerSchema>;

export const PublishLiveAnswerSchema = z.object({ published: z.number().int().nonnegative() }).strict();
export type PublishLiveAnswer = z.infer<typeof PublishLiveAnswerSchema>;

/** The verbs of `<prefix>.cmd.turn.<turnId>.<verb>` a turn's owner answers for its runner (subjects.ts: runnerAnswer, …). */
export const RUNNER_VERBS = {
  answer: 'runner-answer',
  results: 'runner-results',
  fail: 'runner-fail',
  lease: 'runner-lease',
  approval: 'runner-approval',
  live: 'runner-live',
  interrupted: 'runner-interrupted',
} as const;

/** The subjects' names in subjects(), one per report: `runnerAnswer`, `runnerResults`, … */
export type RunnerReport = `runner${Capitalize<keyof typeof RUNNER_VERBS>}`;

import { z } from 'zod';
import { recordedAgentFields } from './agent-fields';
import { ApprovalPolicySchema, TurnLimitsSchema } from './limits';
import { ModelSpecSchema, ToolCallSchema, UsageSchema } from './models';

/** Where steers are delivered: a step's tool results, a text-only end, or an urgent steer's cut of the step (docs/design.md §2, "Urgency"). */
export const BOUNDARIES = ['tool_results', 'turn_end', 'interrupt'] as const;
export type Boundary = (typeof BOUNDARIES)[number];

/** When a steer wants to reach the model: at the next boundary (the default), or now, cutting the step (docs/design.md §2, "Urgency"). */
export const STEER_URGENCIES = ['next_boundary', 'interrupt'] as const;
export type SteerUrgency = (typeof STEER_URGENCIES)[number];

/** Why a steer was dropped. Every reason hands the text back to the client. */
export const DROP_REASONS = [
  'withdrawn',
  'turn_cancelled',
  'turn_failed',
  'max_steps',
  'continuation_cap',
  'engine_lost',
  /** Written by engines before durable turns; a stopping engine now hands its turns over instead. */
  'engine_shutdown',
  /** An `onTurnEnd: "drop"` steer still queued at a text-only end. */
  'turn_ended',
  /** An `onTurnEnd: "next_turn"` steer: its text is the prompt of `nextTurnId`. */
  'moved_to_next_turn',
  /** Still queued at the deadline its `ttlMs` set. */
  'expired',
] as const;
export type DropReason = (typeof DROP_REASONS)[number];

/** What becomes of a steer the turn ends without delivering (docs/design.md §2, "At a turn's end"); `continue` is the default. */
export const ON_TURN_END = ['continue', 'drop', 'next_turn'] as const;
export type OnTurnEnd = (typeof ON_TURN_END)[number];

export const APPROVAL_DECISIONS = ['approved', 'denied'] as const;
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];
/** Who decided: the person, the policy's timeout, or the turn's end (cancel, failure, engine loss). */
export const APPROVAL_DECIDERS = ['user', 'timeout', 'cancel'] as const;
export type ApprovalDecider = (typeof APPROVAL_DECIDERS)[number];

const step = z.number().int().positive();
const uuid = z.uuid();

export const EventDataSchemas = {
  ConversationCreated: z.object({}).strict(),
  TurnStarted: z
    .object({
      prompt: z.string(),
      model: ModelSpecSchema,
      limits: TurnLimitsSchema,
      engineId: z.string(),
      approvals: ApprovalPolicySchema.optional(),
      /** instructions, settings, tools and the agent version, as resolved (docs/design.md §6.1, "A turn's agent"). */
      ...recordedAgentFields,
      /** `external`: another process runs the turn's loop (docs/runner-protocol.md); absent: the engine does. */
      runner: z.literal('external').optional(),
      /** SHA-256 (hex) of the external runner's lease token: an engine that resumes the turn checks the runner's reports with it. */
      leaseDigest: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    })
    .strict(),
  /** A turn waits behind the conversation's running one (docs/design.md §8); `TurnStarted` or `TurnCancelled` follows. */
  TurnQueued: z
    .object({
      prompt: z.string(),
      model: ModelSpecSchema,
      limits: TurnLimitsSchema,
      approvals: ApprovalPolicySchema.optional(),
      ...recordedAgentFields,
      /** 1 = the next to start. */
      position: z.number().int().positive(),
      /** A follow-up made of `next_turn` steers: the turn they were moved from. */
      fromTurnId: uuid.optional(),
    })
    .strict(),
  /** Another engine (or the same one, restarted) took the turn over from the log and goes on with it. */
  TurnResumed: z
    .object({ engineId: z.string(), previousEngineId: z.string(), attempt: z.number().int().positive() })
    .strict(),
  ModelRequested: z.object({ step, steerIds: z.array(uuid).default([]) }).strict(),
  ModelResponded: z
    .object({ step, text: z.string(), toolCalls: z.array(ToolCallSchema), usage: UsageSchema.optional() })
    .strict(),
  /**
   * An urgent steer cut the step's model answer while it was being written:
   * `partialText` is what the model had written when the interrupt was decided.
   * Never an answer (no ModelResponded of this step follows); docs/design.md §2, "Urgency".
   */
  ModelInterrupted: z.object({ step, partialText: z.string(), usage: UsageSchema.optional() }).strict(),
  ToolCallStarted: z
    .object({ step, toolCallId: z.string(), name: z.string(), args: z.record(z.string(), z.unknown()) })
    .strict(),
  ToolCallFinished: z
    .object({
      step,
      toolCallId: z.string(),
      name: z.string(),
      ok: z.boolean(),
      output: z.unknown().optional(),
      error: z.object({ code: z.string(), message: z.string() }).strict().optional(),
      durationMs: z.number().nonnegative(),
    })
    .strict(),
  ToolApprovalRequested: z
    .object({ step, toolCallId: z.string(), name: z.string(), args: z.record(z.string(), z.unknown()) })
    .strict(),
  ToolApprovalDecided: z
    .object({
      step,
      toolCallId: z.string(),
      decision: z.enum(APPROVAL_DECISIONS),
      reason: z.string().optional(),
      by: z.enum(APPROVAL_DECIDERS),
    })
    .strict(),
  SteerQueued: z
    .object({
      steerId: uuid,
      text: z.string(),
      position: z.number().int().positive(),
      queueDepth: z.number().int().positive(),
      /** Absent: `continue`. */
      onTurnEnd: z.enum(['drop', 'next_turn']).optional(),
      /** When a steer sent with `ttlMs` expires if it is still queued. */
      expiresAt: z.iso.datetime().optional(),
      /** Absent: `next_boundary`. `interrupt`: the steer cuts the step it arrives in. */
      urgency: z.literal('interrupt').optional(),
      /** An urgent steer's wait: the step's running calls that declare themselves non-interruptible; it is delivered once they finish. */
      waitingFor: z.array(z.string()).optional(),
    })
    .strict(),
  SteerEdited: z.object({ steerId: uuid, text: z.string(), previousText: z.string() }).strict(),
  SteeringDelivered: z
    .object({
      steerId: uuid,
      text: z.string(),
      position: z.number().int().positive(),
      step,
      boundary: z.enum(BOUNDARIES),
      requestStep: step,
      afterToolCallIds: z.array(z.string()),
      rendered: z.string(),
    })
    .strict(),
  SteerDropped: z
    .object({ steerId: uuid, text: z.string(), position: z.number().int().positive(), reason: z.enum(DROP_REASONS), nextTurnId: uuid.optional() })
    .strict(),
  TurnCompleted: z.object({ steps: z.number().int().nonnegative(), text: z.string() }).strict(),
  TurnCancelled: z.object({ steps: z.number().int().nonnegative(), reason: z.string() }).strict(),
  TurnFailed: z
    .object({ steps: z.number().int().nonnegative(), error: z.object({ code: z.string(), message: z.string() }).strict() })
    .strict(),
} as const;

export type EventType = keyof typeof EventDataSchemas;
export const EVENT_TYPES = Object.keys(EventDataSchemas) as EventType[];
export const TERMINAL_TURN_EVENTS = ['TurnCompleted', 'TurnCancelled', 'TurnFailed'] as const satisfies readonly EventType[];
export const STEER_SETTLEMENTS = ['SteeringDelivered', 'SteerDropped'] as const satisfies readonly EventType[];
/** The version an event type starts at. */
export const EVENT_VERSION = 1;
/**
 * Types written at a later version today. SteerDropped v2: the reasons of
 * docs/design.md §2, "Drop reasons" (`turn_ended`, `moved_to_next_turn`, `expired`) and `nextTurnId`.
 * TurnStarted v2: a model may be `{provider: "anthropic", name}` (docs/design.md §6.1).
 * TurnStarted v3 and TurnQueued v2: the turn's agent — `instructions`,
 * `settings`, `tools`, `agent`, each optional — and a model's `endpoint` (docs/design.md §6.1, "A turn's agent").
 * SteeringDelivered v2: the boundary `interrupt` (docs/design.md §2, "Urgency").
 */
const LATER_VERSIONS: Partial<Record<EventType, number>> = { SteerDropped: 2, TurnStarted: 3, TurnQueued: 2, SteeringDelivered: 2 };

/** The version every new event of `type` is written at. */
export function eventVersion(type: EventType): number {
  return LATER_VERSIONS[type] ?? EVENT_VERSION;
}

const envelopeFields = (version: number) => ({
  id: uuid,
  version: z.literal(version),
  tenantId: z.string().min(1),
  conversationId: uuid,
  at: z.iso.datetime(),
});

function envelope<T extends EventType>(type: T) {
  const turnScoped = type !== 'ConversationCreated';
  return z
    .object({
      ...envelopeFields(eventVersion(type)),
      type: z.literal(type),
      turnId: turnScoped ? uuid : z.null(),
      seq: turnScoped ? z.number().int().positive() : z.literal(0),
      data: EventDataSchemas[type],
    })
    .strict();
}

export const EventSchemas = Object.fromEntries(EVENT_TYPES.map((t) => [t, envelope(t)])) as {
  [T in EventType]: ReturnType<typeof envelope<T>>;
};

export type EventData<T extends EventType> = z.infer<(typeof EventDataSchemas)[T]>;

export type SteerlineEventOf<T extends EventType> = {
  id: string;
  type: T;
  version: number;
  tenantId: string;
  conversationId: string;
  turnId: T extends 'ConversationCreated' ? null : string;
  seq: number;
  at: string;
  data: EventData<T>;
};
export type SteerlineEvent = { [T in EventType]: SteerlineEventOf<T> }[EventType];
export type TurnEvent = Exclude<SteerlineEvent, SteerlineEventOf<'ConversationCreated'>>;

export const SteerlineEventSchema = z.discriminatedUnion(
  'type',
  EVENT_TYPES.map((t) => EventSchemas[t]) as unknown as [z.ZodObject, ...z.ZodObject[]],
);

/** Events about one steer: they carry its id as a header (`STEER_ID_HEADER`). */
export const STEER_EVENTS = ['SteerQueued', 'SteerEdited', 'SteeringDelivered', 'SteerDropped'] as const satisfies readonly EventType[];

export function isSteerEventType(type: string): type is (typeof STEER_EVENTS)[number] {
  return (STEER_EVENTS as readonly string[]).includes(type);
}

export function isTerminalTurnEvent(e: { type: string }): boolean {
  return (TERMINAL_TURN_EVENTS as readonly string[]).includes(e.type);
}

import { z } from 'zod';
import { TOOL_NAME } from './limits';

/**
 * Remote tools: any service offers tools to every engine of a deployment over
 * NATS. The protocol, all JSON:
 *
 * | subject                        | kind                  | body → reply |
 * | ------------------------------ | --------------------- | ------------ |
 * | `<prefix>.tool.<name>`         | request/reply, queue group `<prefix>-tool-<name>` | `ToolCallRequest` → `ToolCallReply` |
 * | `<prefix>.tool.<name>.cancel`  | publish, every instance | `ToolCancel`: stop the call `callId`; no reply |
 * | the call's `progressTo`        | publish, by the service | `ToolCallProgress` while the call runs (live output); no reply |
 * | `<prefix>.tools.describe`      | request, many replies | `{}` → one `ToolServiceDescription` per service instance |
 * | `<prefix>.tools.announce`      | publish               | `ToolServiceDescription`, sent by a service when it starts |
 *
 * An engine learns the tools from describe rounds (at its start and then
 * periodically) and from announcements, and offers them to the model with
 * their JSON Schemas. A timeout, an error reply, a malformed reply or nobody
 * answering becomes an error tool result the model sees, never a crash.
 * Unknown fields are ignored so that either side can grow the protocol.
 * `tools` and `tool` are different second tokens, so no tool name can collide
 * with `describe`/`announce`; none of these overlap the event stream's subjects.
 */


export function toolSubjects(prefix: string) {
  const name = (n: string) => {
    if (!TOOL_NAME.test(n)) throw new Error(`not a valid tool name: ${JSON.stringify(n)}`);
    return n;
  };
  return {
    call: (tool: string) => `${prefix}.tool.${name(tool)}`,
    cancel: (tool: string) => `${prefix}.tool.${name(tool)}.cancel`,
    /** Instances of one tool share it, so each call runs once. */
    queue: (tool: string) => `${prefix}-tool-${name(tool)}`,
    describe: `${prefix}.tools.describe`,
    announce: `${prefix}.tools.announce`,
    /**
     * Where a call's progress reports go (its `progressTo`): a subject of its own
     * per call, not the engine's inbox, so a tool service never needs the right
     * to publish into the engine's replies.
     */
    progress: (callId: string) => `${prefix}.toolprogress.${callId}`,
  };
}
export type ToolSubjects = ReturnType<typeof toolSubjects>;

export const ToolDescriptorSchema = z.object({
  name: z.string().regex(TOOL_NAME),
  description: z.string().max(8000).default(''),
  /** JSON Schema of the arguments object, offered to the model as is. */
  parameters: z.record(z.string(), z.unknown()).default({ type: 'object', properties: {} }),
  /** How long the engine waits for one call; the engine's default when absent. */
  timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
  /**
   * Running a call twice does no harm: a call cut off by a lost engine is run
   * again by the engine that resumes the turn. Otherwise it ends `interrupted`.
   */
  idempotent: z.boolean().optional(),
  /**
   * `false`: an urgent steer (docs/design.md §2, "Urgency") waits for a running
   * call to finish instead of cancelling it. Absent: a call may be cancelled.
   */
  interruptible: z.boolean().optional(),
});
export type ToolDescriptor = z.input<typeof ToolDescriptorSchema>;

export const ToolServiceDescriptionSchema = z.object({
  service: z.string().min(1).max(200),
  tools: z.array(ToolDescriptorSchema).max(256),
});
export type ToolServiceDescription = z.infer<typeof ToolServiceDescriptionSchema>;

export const ToolCallRequestSchema = z.object({
  /** Unique per call across the deployment; a cancel names it. */
  callId: z.string().min(1),
  tenantId: z.string(),
  conversationId: z.string(),
  turnId: z.string(),
  step: z.number().int().positive(),
  /** The model's id of the call, unique only within its turn. */
  toolCallId: z.string(),
  args: z.record(z.string(), z.unknown()),
  /**
   * The engine's bound on one output (STEERLINE_MAX_OUTPUT_BYTES): a larger
   * output is cut to it by the service, with the truncation marker, so the
   * marker names the output's true size. Absent: cut only to what NATS carries.
   */
  maxOutputBytes: z.number().int().positive().optional(),
  /**
   * Where the service may publish `ToolCallProgress` while it works
   * (`<prefix>.toolprogress.<callId>`); absent: nobody listens. Engines shown it as
   * ToolProgress live output (docs/design.md §11).
   */
  progressTo: z.string().min(1).max(256).optional(),
});
export type ToolCallRequest = z.infer<typeof ToolCallRequestSchema>;

export const ToolCallProgressSchema = z.object({
  callId: z.string().min(1),
  /** Done so far, 0..1. */
  progress: z.number().min(0).max(1).optional(),
  message: z.string().max(1_000).optional(),
});
export type ToolCallProgress = z.infer<typeof ToolCallProgressSchema>;

export const ToolCallErrorSchema = z.object({
  code: z.string().min(1).max(100),
  message: z.string().max(8000),
  /** The work cannot go on: the turn fails instead of showing the error to the model. */
  fatal: z.boolean().optional(),
});
export const ToolCallReplySchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), output: z.unknown() }),
  z.object({ ok: z.literal(false), error: ToolCallErrorSchema }),
]);
export type ToolCallReply = z.infer<typeof ToolCallReplySchema>;

export const ToolCancelSchema = z.object({ callId: z.string().min(1), reason: z.string().max(500).optional() });
export type ToolCancel = z.infer<typeof ToolCancelSchema>;

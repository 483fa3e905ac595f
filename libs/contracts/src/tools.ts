import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { z } from 'zod';
import { decodeJson, encodeJson } from './nats';
import { ENVELOPE_ROOM_BYTES, TOOL_NAME } from './limits';
import { boundOutput } from './output-bound';
import { maxPayload, publishSafely } from './safe-send';

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
   * ToolProgress live output (docs/design.md §8.1).
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

/** What a tool implementation throws to reply with a typed error the model sees. */
export class ToolFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly fatal = false,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}

export interface ServedTool {
  descriptor: ToolDescriptor;
  /** `signal` aborts when the engine cancels the call (its turn was cancelled or it timed out). */
  run(args: Record<string, unknown>, context: { signal: AbortSignal; call: ToolCallRequest; progress: ProgressReporter }): Promise<unknown> | unknown;
}

/** Reports how a call is going: `fraction` 0..1 when known, a short message; cheap, fire and forget. */
export type ProgressReporter = (fraction?: number, message?: string) => void;

export interface ToolServer {
  /** Resolves once the server's subscriptions are registered and the service has announced itself. */
  ready: Promise<void>;
  stop(): void;
}

/**
 * Serves tools the way the protocol above says: describe, calls, cancels and
 * one announcement. The helper a tool service is written with.
 */
export function serveTools(nc: NatsConnection, prefix: string, service: string, tools: ServedTool[], onError?: (err: unknown) => void): ToolServer {
  const ts = toolSubjects(prefix);
  const description = ToolServiceDescriptionSchema.parse({ service, tools: tools.map((t) => t.descriptor) });
  const running = new Map<string, AbortController>();
  const subs: Subscription[] = [
    nc.subscribe(ts.describe, {
      callback: (err, msg) => {
        if (err) onError?.(err);
        else if (msg.reply) report(publishSafely(nc, msg.reply, encodeJson(description)), onError);
      },
    }),
  ];
  for (const tool of tools) {
    const name = tool.descriptor.name;
    subs.push(nc.subscribe(ts.call(name), { queue: ts.queue(name), callback: (err, msg) => (err ? onError?.(err) : void answerCall(nc, msg, tool, running, onError)) }));
    subs.push(
      nc.subscribe(ts.cancel(name), {
        callback: (err, msg) => {
          if (err) return onError?.(err);
          const cancel = ToolCancelSchema.safeParse(safeDecode(msg.data));
          if (cancel.success) running.get(cancel.data.callId)?.abort(new ToolFailure('cancelled', cancel.data.reason ?? 'cancelled'));
        },
      }),
    );
  }
  const ready = nc.flush().then(() => report(publishSafely(nc, ts.announce, encodeJson(description)), onError));
  return {
    ready,
    stop() {
      for (const sub of subs) sub.unsubscribe();
      for (const controller of running.values()) controller.abort(new ToolFailure('cancelled', 'the tool service stopped'));
    },
  };
}

async function answerCall(nc: NatsConnection, msg: Msg, tool: ServedTool, running: Map<string, AbortController>, onError?: (err: unknown) => void): Promise<void> {
  const parsed = ToolCallRequestSchema.safeParse(safeDecode(msg.data));
  if (!parsed.success) return respond(nc, msg, { ok: false, error: { code: 'invalid_request', message: 'not a tool call request' } }, onError);
  const call = parsed.data;
  const controller = new AbortController();
  running.set(call.callId, controller);
  let reply: ToolCallReply;
  try {
    const output = await tool.run(call.args, { signal: controller.signal, call, progress: reporter(nc, call) });
    // Cut here, where the whole output is known: NATS could not carry more, and the marker keeps its true size.
    const bound = Math.min(call.maxOutputBytes ?? Infinity, maxPayload(nc) - ENVELOPE_ROOM_BYTES);
    reply = { ok: true, output: boundOutput(output, bound) };
  } catch (err) {
    if (!(err instanceof ToolFailure)) onError?.(err);
    reply = { ok: false, error: err instanceof ToolFailure ? { code: err.code, message: err.message, fatal: err.fatal } : { code: 'tool_failed', message: (err as Error)?.message ?? String(err) } };
  } finally {
    running.delete(call.callId);
  }
  respond(nc, msg, reply, onError);
}

function reporter(nc: NatsConnection, call: ToolCallRequest): ProgressReporter {
  return (fraction, message) => {
    if (!call.progressTo) return;
    const p = fraction === undefined || !Number.isFinite(fraction) ? undefined : Math.min(1, Math.max(0, fraction));
    const body: ToolCallProgress = { callId: call.callId, ...(p === undefined ? {} : { progress: p }), ...(message ? { message: message.slice(0, 1_000) } : {}) };
    // The connection the reply goes out on, so every report precedes it.
    publishSafely(nc, call.progressTo, encodeJson(body));
  };
}

function respond(nc: NatsConnection, msg: Msg, reply: ToolCallReply, onError?: (err: unknown) => void): void {
  if (!msg.reply) return;
  let data: Uint8Array;
  try {
    data = encodeJson(reply);
  } catch (err) {
    data = encodeJson({ ok: false, error: { code: 'tool_failed', message: `the output is not JSON: ${(err as Error).message}` } } satisfies ToolCallReply);
  }
  const failure = publishSafely(nc, msg.reply, data);
  if (failure?.code !== 'payload_too_large') return report(failure, onError);
  // Still too large after the cut (JSON escapes can grow it): the engine still gets an answer.
  report(publishSafely(nc, msg.reply, encodeJson({ ok: false, error: { code: 'output_too_large', message: failure.message } } satisfies ToolCallReply)), onError);
}

function report(failure: Error | undefined, onError?: (err: unknown) => void): void {
  if (failure) onError?.(failure);
}

function safeDecode(data: Uint8Array): unknown {
  try {
    return decodeJson(data);
  } catch {
    return undefined;
  }
}

/** Collects every description that answers one describe request within `windowMs`. */
export async function describeTools(nc: NatsConnection, prefix: string, windowMs: number): Promise<ToolServiceDescription[]> {
  // The connection's own inbox prefix: under subject permissions (deploy/nats/) a role may subscribe to its inboxes only.
  const inbox = inboxFor(nc);
  const found: ToolServiceDescription[] = [];
  const sub = nc.subscribe(inbox, {
    callback: (_err, msg) => {
      const parsed = ToolServiceDescriptionSchema.safeParse(safeDecode(msg.data));
      if (parsed.success) found.push(parsed.data);
    },
  });
  const failure = publishSafely(nc, toolSubjects(prefix).describe, encodeJson({}), { reply: inbox });
  if (failure) {
    sub.unsubscribe();
    throw failure;
  }
  await new Promise((r) => setTimeout(r, windowMs));
  sub.unsubscribe();
  return found;
}

/** A new inbox under the connection's own prefix (NATS_INBOX_PREFIX): where a role with subject permissions may receive. */
export function inboxFor(nc: NatsConnection): string {
  return createInbox((nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
}

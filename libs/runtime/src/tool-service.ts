import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  boundOutput,
  ENVELOPE_ROOM_BYTES,
  toolSubjects,
  ToolCallRequestSchema,
  ToolCancelSchema,
  ToolServiceDescriptionSchema,
  type ToolCallProgress,
  type ToolCallReply,
  type ToolCallRequest,
  type ToolDescriptor,
  type ToolServiceDescription,
} from '@steerline/contracts';
import { decodeJson, encodeJson } from './nats';
import { maxPayload, publishSafely } from './safe-send';

// The remote-tool protocol itself (subjects, schemas) is in @steerline/contracts (tools.ts); this is its NATS side.

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

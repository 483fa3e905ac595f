import { RequestError, TimeoutError, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  ToolCallProgressSchema,
  ToolCallReplySchema,
  ToolDescriptorSchema,
  uuidv7,
  type ToolCallRequest,
  type ToolCancel,
  type ToolDescriptor,
  type ToolSubjects,
} from '@steerline/contracts';
import { decodeJson, encodeJson, publishSafely } from '@steerline/runtime';
import { ToolError, type Tool, type ToolCallContext } from '../tool.registry';

/**
 * A tool another service serves on `<prefix>.tool.<name>`. Every way the call
 * can go wrong — nobody answers, no answer in time, an error reply, a reply
 * that is not one — is a non-fatal `ToolError`: the model sees it and the turn
 * goes on. Only the service itself can say `fatal`.
 */
export function remoteTool(nc: NatsConnection, ts: ToolSubjects, descriptor: ToolDescriptor, defaultTimeoutMs: number): Tool {
  const d = ToolDescriptorSchema.parse(descriptor);
  const timeoutMs = d.timeoutMs ?? defaultTimeoutMs;
  const cancel = (callId: string, reason: string) => {
    // Best effort, never a throw: the call has already failed or been abandoned on this side either way.
    publishSafely(nc, ts.cancel(d.name), encodeJson({ callId, reason } satisfies ToolCancel));
  };
  return {
    spec: { name: d.name, description: d.description, parameters: d.parameters },
    idempotent: d.idempotent === true,
    source: 'service',
    interruptible: d.interruptible !== false,
    async run(args, signal, call?: ToolCallContext) {
      signal.throwIfAborted();
      // The model's call id repeats across turns ("call_1_0"); a cancel must reach exactly this call.
      const callId = uuidv7();
      const body: ToolCallRequest = {
        callId,
        tenantId: call?.tenantId ?? '',
        conversationId: call?.conversationId ?? '',
        turnId: call?.turnId ?? '',
        step: call?.step ?? 1,
        toolCallId: call?.toolCallId ?? callId,
        args,
        ...(call?.maxOutputBytes !== undefined && { maxOutputBytes: call.maxOutputBytes }),
      };
      const progress = call?.progress ? listenForProgress(nc, ts.progress(callId), callId, call.progress) : undefined;
      if (progress) body.progressTo = progress.getSubject();
      let onAbort!: () => void;
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => {
          cancel(callId, describeAbort(signal.reason));
          reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        const msg = await Promise.race([nc.request(ts.call(d.name), encodeJson(body), { timeout: timeoutMs }), aborted]).catch((err: unknown) => {
          if (signal.aborted) throw err;
          throw asToolError(err, d.name, timeoutMs, () => cancel(callId, 'timeout'));
        });
        return outputOf(msg, d.name);
      } finally {
        signal.removeEventListener('abort', onAbort);
        progress?.unsubscribe();
      }
    },
  };
}

/** The call's own progress subject (live output); a report for another call is ignored. */
function listenForProgress(nc: NatsConnection, subject: string, callId: string, report: NonNullable<ToolCallContext['progress']>): Subscription {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return;
      let raw: unknown;
      try {
        raw = decodeJson(msg.data);
      } catch {
        return;
      }
      const parsed = ToolCallProgressSchema.safeParse(raw);
      if (parsed.success && parsed.data.callId === callId) report({ progress: parsed.data.progress, message: parsed.data.message });
    },
  });
}

function asToolError(err: unknown, name: string, timeoutMs: number, onTimeout: () => void): ToolError {
  if (err instanceof RequestError && err.isNoResponders()) return new ToolError('tool_unavailable', `no service answers tool ${name}`);
  if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) {
    // The service may still be working on it: tell it to stop.
    onTimeout();
    return new ToolError('tool_timeout', `tool ${name} did not answer within ${timeoutMs} ms`);
  }
  return new ToolError('tool_unavailable', `tool ${name} could not be called: ${(err as Error)?.message ?? String(err)}`);
}

function outputOf(msg: Msg, name: string): unknown {
  let raw: unknown;
  try {
    raw = decodeJson(msg.data);
  } catch {
    throw new ToolError('tool_bad_reply', `tool ${name} answered with something that is not JSON`);
  }
  const reply = ToolCallReplySchema.safeParse(raw);
  if (!reply.success) throw new ToolError('tool_bad_reply', `tool ${name} answered with something that is not a tool reply`);
  if (reply.data.ok) return reply.data.output ?? null;
  const { code, message, fatal } = reply.data.error;
  throw new ToolError(code, message, fatal ?? false);
}

function describeAbort(reason: unknown): string {
  return reason instanceof Error ? reason.message : 'cancelled';
}

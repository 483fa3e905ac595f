import { SteerlineError } from './errors';
import type { SteerlineEvent } from './events';
import { readEvent, type DecodeOptions } from './event-reader';

export type DecodeFailure = { ok: false; reason: 'not_json' | 'unknown_type' | 'unknown_version' | 'upcast_failed' | 'schema'; message: string };
/** `upcastFrom`: the version it was written at, when older; `ignoredFields`: unknown fields a newer writer added. */
export type DecodeResult = { ok: true; event: SteerlineEvent; upcastFrom?: number; ignoredFields?: string[] } | DecodeFailure;

/**
 * Decodes one event message: older versions are upcast, unknown fields are
 * dropped (see `readEvent`). Never throws: a consumer decides what to do with
 * a bad one (the projector dead-letters it).
 */
export function decodeEvent(payload: Uint8Array | string, opts: DecodeOptions = {}): DecodeResult {
  let raw: unknown;
  try {
    // A view over the message's bytes, not a copy: a replay decodes millions of them.
    raw = JSON.parse(typeof payload === 'string' ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8'));
  } catch (err) {
    return { ok: false, reason: 'not_json', message: (err as Error).message };
  }
  return readEvent(raw, opts);
}

export function encodeEvent(event: SteerlineEvent): Uint8Array {
  return Buffer.from(JSON.stringify(event));
}

/** An event message a consumer cannot read; `reason` says why (see `DecodeFailure`). */
export class EventDecodeError extends SteerlineError {
  constructor(
    readonly reason: DecodeFailure['reason'],
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super('invalid_request', message, { ...details, reason });
    this.name = 'EventDecodeError';
  }
}

/** Decodes one event or throws `EventDecodeError`. Unknown fields are dropped, never an error. */
export function decodeOrThrow(payload: Uint8Array | string, opts: DecodeOptions = {}): SteerlineEvent {
  const decoded = decodeEvent(payload, opts);
  if (!decoded.ok) throw new EventDecodeError(decoded.reason, decoded.message);
  return decoded.event;
}

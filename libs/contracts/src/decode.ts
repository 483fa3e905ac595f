import { EVENT_TYPES, EVENT_VERSION, EventSchemas, type EventType, type SteerlineEvent } from './events';

export type DecodeFailure = { ok: false; reason: 'not_json' | 'unknown_type' | 'unknown_version' | 'schema'; message: string };
export type DecodeResult = { ok: true; event: SteerlineEvent } | DecodeFailure;

/**
 * Decodes one event message. Never throws: a consumer decides what to do with
 * a bad one (the projector dead-letters it).
 */
export function decodeEvent(payload: Uint8Array | string): DecodeResult {
  let raw: unknown;
  try {
    raw = JSON.parse(typeof payload === 'string' ? payload : Buffer.from(payload).toString('utf8'));
  } catch (err) {
    return { ok: false, reason: 'not_json', message: (err as Error).message };
  }
  const type = (raw as { type?: unknown } | null)?.type;
  if (typeof type !== 'string' || !(EVENT_TYPES as string[]).includes(type)) {
    return { ok: false, reason: 'unknown_type', message: `unknown event type ${JSON.stringify(type)}` };
  }
  const version = (raw as { version?: unknown }).version;
  if (version !== EVENT_VERSION) {
    return { ok: false, reason: 'unknown_version', message: `${type} version ${JSON.stringify(version)} is not readable` };
  }
  const parsed = EventSchemas[type as EventType].safeParse(raw);
  if (!parsed.success) return { ok: false, reason: 'schema', message: parsed.error.message };
  return { ok: true, event: parsed.data as SteerlineEvent };
}

export function encodeEvent(event: SteerlineEvent): Uint8Array {
  return Buffer.from(JSON.stringify(event));
}

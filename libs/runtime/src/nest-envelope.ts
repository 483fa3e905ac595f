import type { Reply } from '@steerline/contracts';

/**
 * Nest's NATS transport, as a `ClientProxy` (`Transport.NATS`) speaks it:
 * `client.send(subject, body)` publishes `{pattern, data, id}` and reads
 * `{response, isDisposed, id}` (or `{err, isDisposed, id}`) on its own inbox.
 * Steerline's responders (`serve`/`answer`) read the envelope and answer in
 * Nest's shape, so a Nest service sends commands and queries its own way; a
 * plain request (the gateway's, nats.js's, the `nats` CLI's) is answered
 * `{ok, data}` / `{ok, error}` as always.
 *
 * A body is Nest's only when it has `pattern`, `id` and nothing but `data`
 * besides, and `pattern` is the very subject it came on: no command or query
 * has such fields (their schemas refuse unknown keys), so neither shape can be
 * taken for the other.
 */
export interface NestRequest {
  id: string;
  data: unknown;
}

/** What Nest's client reads: one answer, and the request is over (`isDisposed`). */
export type NestReply = { id: string; response: unknown; isDisposed: true } | { id: string; err: NestError; isDisposed: true };

/** Nest's `err` shape (`{status: "error", message}`, what its RPC exception filter sends), with Steerline's `code` and details. */
export type NestError = { status: 'error'; message: string; code: string; [detail: string]: unknown };

const NEST_KEYS = new Set(['pattern', 'data', 'id']);

/** The envelope's id and data when `body` is a Nest request on `subject`; otherwise undefined. */
export function nestRequest(body: unknown, subject: string): NestRequest | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const b = body as Record<string, unknown>;
  if (typeof b.id !== 'string' || b.pattern !== subject || !Object.keys(b).every((k) => NEST_KEYS.has(k))) return undefined;
  // Nest sends `data: undefined` as no key at all: an empty body, as a plain empty request is.
  return { id: b.id, data: b.data ?? {} };
}

/** A typed reply in Nest's shape, for the request `id`. */
export function nestReply(id: string, reply: Reply<unknown>): NestReply {
  if (reply.ok) return { id, response: reply.data, isDisposed: true };
  return { id, err: { ...reply.error, status: 'error' }, isDisposed: true };
}

import type { NatsConnection, PublishOptions } from '@nats-io/transport-node';
import { SteerlineError } from '@steerline/contracts';

/**
 * NATS's own default, used only before the connection has heard the server's
 * INFO (nothing can be sent then anyway); every other time the limit is the
 * one the server announced (`nc.info.max_payload`).
 */
const NATS_DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** The largest message (payload plus headers) the connected server takes. */
export function maxPayload(nc: NatsConnection): number {
  return nc.info?.max_payload ?? NATS_DEFAULT_MAX_PAYLOAD;
}

/** The `payload_too_large` error for a message of `bytes` on a connection. */
export function tooLarge(what: string, bytes: number, limit: number): SteerlineError {
  return new SteerlineError('payload_too_large', `${what} is ${bytes} bytes, more than the ${limit} bytes NATS carries`, { bytes, maxPayload: limit });
}

/**
 * Publishes without ever throwing: the failure comes back as a typed error
 * instead — `payload_too_large` when the message is over the server's
 * `max_payload`, `unavailable` when the connection is closed or draining.
 * A publish that throws inside a subscription callback would unwind the NATS
 * client's parser and the process with it; every publisher and responder
 * sends through here.
 */
export function publishSafely(nc: NatsConnection, subject: string, data: Uint8Array, opts?: Partial<PublishOptions>): SteerlineError | undefined {
  const limit = maxPayload(nc);
  // Headers count against the limit too; ours are a few hundred bytes at most.
  const bytes = data.length + headerBytes(opts?.headers);
  if (bytes > limit) return tooLarge(`the message on ${subject}`, bytes, limit);
  try {
    nc.publish(subject, data, opts);
    return undefined;
  } catch (err) {
    return new SteerlineError('unavailable', `could not publish on ${subject}: ${(err as Error)?.message ?? String(err)}`);
  }
}

// nats.js's headers implementation encodes itself; the interface does not say so.
function headerBytes(h: unknown): number {
  return (h as { encode?: () => Uint8Array } | undefined)?.encode?.().length ?? 0;
}

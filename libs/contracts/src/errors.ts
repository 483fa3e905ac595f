/** Every error code a client or service can receive (docs/design.md §4). */
export const ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  /** A runner report without the turn's lease: another runner holds it, or it lapsed. */
  'not_lease_holder',
  'not_found',
  'turn_not_running',
  'turn_already_running',
  'turn_moved_on',
  'queue_full',
  'already_delivered',
  'steer_dropped',
  'already_decided',
  'turn_queue_full',
  'rate_limited',
  'payload_too_large',
  'unavailable',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The HTTP status each code maps to; written once, used by every edge. */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  not_lease_holder: 403,
  not_found: 404,
  turn_not_running: 409,
  turn_already_running: 409,
  turn_moved_on: 409,
  queue_full: 429,
  already_delivered: 409,
  steer_dropped: 409,
  already_decided: 409,
  turn_queue_full: 429,
  rate_limited: 429,
  payload_too_large: 413,
  unavailable: 503,
  internal: 500,
};

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  [detail: string]: unknown;
}

/** A domain error with a stable code, thrown in the core and mapped once at each edge. */
export class SteerlineError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'SteerlineError';
  }

  toBody(): ErrorBody {
    return { ...this.details, code: this.code, message: this.message };
  }

  static fromBody(body: ErrorBody): SteerlineError {
    const { code, message, ...details } = body;
    return new SteerlineError(code, message, details);
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
}

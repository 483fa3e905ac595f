/**
 * Every error the API answers with, typed by its `code` (the contract's error
 * codes: `invalid_request`, `not_found`, `turn_not_running`, `queue_full`,
 * `rate_limited`, …). `status` is the HTTP status; `details` the error body's
 * other fields (for example `retryAfterSeconds`, or the `steerId` of a steer
 * whose fate is unknown after `unavailable`).
 */
export class SteerlineClientError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'SteerlineClientError';
  }
}

/** Reads an error answer; a body that is not the API's error shape still gets a code. */
export async function errorFrom(res: Response): Promise<SteerlineClientError> {
  const text = await res.text().catch(() => '');
  let error: unknown;
  try {
    error = (JSON.parse(text) as { error?: unknown }).error;
  } catch {
    error = undefined;
  }
  if (error && typeof error === 'object' && typeof (error as { code?: unknown }).code === 'string') {
    const { code, message, ...details } = error as { code: string; message?: unknown };
    return new SteerlineClientError(code, typeof message === 'string' ? message : code, res.status, details);
  }
  const code = res.status >= 500 ? 'unavailable' : 'invalid_request';
  return new SteerlineClientError(code, `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`, res.status);
}

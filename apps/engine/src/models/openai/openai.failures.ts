import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ModelError } from '../model.provider';
import { MalformedAnswerError } from './openai.answer';

/** How one failed attempt is handled: tried again (with backoff) or the end of the model call. */
export interface Failure {
  retry: boolean;
  code: string;
  message: string;
  /** How long the endpoint asked to be left alone (`Retry-After`), instead of the backoff. */
  retryAfterMs?: number;
}

/** A `Retry-After` longer than this is not waited for: the turn fails rather than stall for minutes. */
export const MAX_RETRY_AFTER_MS = 30_000;

/**
 * 5xx, 408, 409, timeouts, a connection that fails and malformed answers are
 * transient: another attempt may succeed. A 429 is tried again after the
 * endpoint's `Retry-After` (or the backoff), unless it asks for more than
 * MAX_RETRY_AFTER_MS. Any other 4xx says the request itself is wrong (bad
 * model name, bad key, context too long): the same request would be refused
 * again, so the turn fails at once with the endpoint's reason.
 */
export function classify(err: unknown): Failure {
  if (err instanceof MalformedAnswerError) return { retry: true, code: 'model_malformed_answer', message: `the model answered with something unusable: ${err.message}` };
  if (err instanceof APIConnectionTimeoutError) return { retry: true, code: 'model_timeout', message: 'the model endpoint did not answer in time' };
  if (err instanceof APIConnectionError) return { retry: true, code: 'model_unavailable', message: `the model endpoint could not be reached: ${causeOf(err)}` };
  if (err instanceof APIError && typeof err.status === 'number') {
    if (err.status === 429) {
      const retryAfterMs = retryAfter(err.headers);
      const tooLong = retryAfterMs !== undefined && retryAfterMs > MAX_RETRY_AFTER_MS;
      return { retry: !tooLong, code: 'model_rate_limited', message: `the model endpoint is rate limiting: ${err.message}`, ...(retryAfterMs !== undefined && { retryAfterMs }) };
    }
    if (err.status >= 500 || err.status === 408 || err.status === 409) return { retry: true, code: 'model_unavailable', message: `the model endpoint failed: ${err.message}` };
    return { retry: false, code: 'model_rejected', message: `the model endpoint refused the request: ${err.message}` };
  }
  return { retry: false, code: 'model_failed', message: (err as Error)?.message ?? String(err) };
}

/** `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or as an HTTP date; undefined when absent or unreadable. */
export function retryAfter(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.get('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function isAbort(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted || err instanceof APIUserAbortError;
}

export function giveUp(failure: Failure, attempts: number): ModelError {
  return new ModelError(failure.code, attempts > 1 ? `${failure.message} (${attempts} attempts)` : failure.message);
}

/** Exponential backoff with full jitter, so engines that failed together do not retry together. */
export function backoffMs(attempt: number, baseMs: number, maxMs = 8000): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** fetch reports "fetch failed" and keeps the reason (ECONNREFUSED, ENOTFOUND …) one cause deeper. */
function causeOf(err: APIConnectionError): string {
  type Cause = { message?: string; code?: string; cause?: Cause };
  let cause = (err as { cause?: Cause }).cause;
  while (cause?.cause && !cause.code) cause = cause.cause;
  return cause?.code ?? cause?.message ?? err.message;
}

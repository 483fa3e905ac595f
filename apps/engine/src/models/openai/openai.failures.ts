import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ModelError } from '../model.provider';
import { MalformedAnswerError } from './openai.answer';

/** How one failed attempt is handled: tried again (with backoff) or the end of the model call. */
export interface Failure {
  retry: boolean;
  code: string;
  message: string;
}

/**
 * 5xx, timeouts, a connection that fails and malformed answers are transient:
 * another attempt may succeed. A 4xx says the request itself is wrong (bad
 * model name, bad key, context too long, rate limit): the same request would
 * be refused again, so the turn fails at once with the endpoint's reason.
 */
export function classify(err: unknown): Failure {
  if (err instanceof MalformedAnswerError) return { retry: true, code: 'model_malformed_answer', message: `the model answered with something unusable: ${err.message}` };
  if (err instanceof APIConnectionTimeoutError) return { retry: true, code: 'model_timeout', message: 'the model endpoint did not answer in time' };
  if (err instanceof APIConnectionError) return { retry: true, code: 'model_unavailable', message: `the model endpoint could not be reached: ${causeOf(err)}` };
  if (err instanceof APIError && typeof err.status === 'number') {
    if (err.status >= 500) return { retry: true, code: 'model_unavailable', message: `the model endpoint failed: ${err.message}` };
    return { retry: false, code: 'model_rejected', message: `the model endpoint refused the request: ${err.message}` };
  }
  return { retry: false, code: 'model_failed', message: (err as Error)?.message ?? String(err) };
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

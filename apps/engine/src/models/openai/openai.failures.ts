import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { classifyStatus, classifyStreamFailure, type Failure } from '../model.failures';
import { MalformedAnswerError } from './openai.answer';

export { backoffMs, giveUp, MAX_RETRY_AFTER_MS, retryAfter, type Failure } from '../model.failures';

/**
 * 5xx, 408, 409, timeouts, a connection that fails and malformed answers are
 * transient: another attempt may succeed. A 429 is tried again after the
 * endpoint's `Retry-After` (or the backoff), unless it asks for more than
 * MAX_RETRY_AFTER_MS. Any other 4xx says the request itself is wrong (bad
 * model name, bad key, context too long): the same request would be refused
 * again, so the turn fails at once with the endpoint's reason.
 */
export function classify(err: unknown): Failure {
  const stream = classifyStreamFailure(err);
  if (stream) return stream;
  if (err instanceof MalformedAnswerError) return { retry: true, code: 'model_malformed_answer', message: `the model answered with something unusable: ${err.message}` };
  if (err instanceof APIConnectionTimeoutError) return { retry: true, code: 'model_timeout', message: 'the model endpoint did not answer in time' };
  if (err instanceof APIConnectionError) return { retry: true, code: 'model_unavailable', message: `the model endpoint could not be reached: ${causeOf(err)}` };
  if (err instanceof APIError && typeof err.status === 'number') return classifyStatus(err.status, err.headers, err.message);
  return { retry: false, code: 'model_failed', message: (err as Error)?.message ?? String(err) };
}

export function isAbort(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted || err instanceof APIUserAbortError;
}

/** fetch reports "fetch failed" and keeps the reason (ECONNREFUSED, ENOTFOUND …) one cause deeper. */
function causeOf(err: APIConnectionError): string {
  type Cause = { message?: string; code?: string; cause?: Cause };
  let cause = (err as { cause?: Cause }).cause;
  while (cause?.cause && !cause.code) cause = cause.cause;
  return cause?.code ?? cause?.message ?? err.message;
}

import { abortableDelay } from './abortable-delay';
import { ModelError } from './model.provider';
import { StreamStalledError } from './stream-watchdog';

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
 * An HTTP status from a model endpoint, as one failed attempt: 5xx, 408 and
 * 409 are transient; a 429 is tried again after the endpoint's `Retry-After`
 * (or the backoff) unless it asks for more than MAX_RETRY_AFTER_MS; any other
 * 4xx says the request itself is wrong (bad model name, bad key, context too
 * long), so the turn fails at once with the endpoint's reason.
 */
export function classifyStatus(status: number, headers: Headers | undefined, message: string): Failure {
  if (status === 429) {
    const retryAfterMs = retryAfter(headers);
    const tooLong = retryAfterMs !== undefined && retryAfterMs > MAX_RETRY_AFTER_MS;
    return { retry: !tooLong, code: 'model_rate_limited', message: `the model endpoint is rate limiting: ${message}`, ...(retryAfterMs !== undefined && { retryAfterMs }) };
  }
  if (status >= 500 || status === 408 || status === 409) return { retry: true, code: 'model_unavailable', message: `the model endpoint failed: ${message}` };
  return { retry: false, code: 'model_rejected', message: `the model endpoint refused the request: ${message}` };
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

export function giveUp(failure: Failure, attempts: number): ModelError {
  return new ModelError(failure.code, attempts > 1 ? `${failure.message} (${attempts} attempts)` : failure.message);
}

/** Exponential backoff with full jitter, so engines that failed together do not retry together. */
export function backoffMs(attempt: number, baseMs: number, maxMs = 8000): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** A streamed answer that broke after it began: tried again as a whole answer, nothing of it recorded. */
export class StreamBrokenError extends Error {
  constructor(cause: unknown) {
    super(`the answer stream broke: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'StreamBrokenError';
  }
}

/** A streamed answer that stalled or broke: transient for every provider; undefined for any other error (the SDK's own). */
export function classifyStreamFailure(err: unknown): Failure | undefined {
  if (err instanceof StreamStalledError) return { retry: true, code: 'model_timeout', message: err.message };
  if (err instanceof StreamBrokenError) return { retry: true, code: 'model_unavailable', message: err.message };
  return undefined;
}

/** A model endpoint as the server's configuration gives it (never a request). */
export interface EndpointConfig {
  /** Unset: the vendor's own endpoint. */
  baseUrl?: string;
  /** Unset: no key is sent. */
  apiKey?: string;
  /** Sent with every request (STEERLINE_MODELS `headers`); never logged. */
  headers?: Record<string, string>;
  /** One attempt's limit. */
  timeoutMs: number;
  /** Further attempts after a transient failure. */
  maxRetries: number;
  /** The first backoff; each further one doubles (with jitter). */
  retryBaseMs?: number;
}

export interface RetryRules {
  classify(err: unknown): Failure;
  /** The caller gave up (a cancel): rethrown as is, never retried. */
  isAbort(err: unknown): boolean;
  onRetry(failure: Failure, attempt: number): void;
}

/**
 * One model call with our retry rules (not the SDK's, so they are in one
 * place and a cancel also ends a backoff): a transient failure is tried again
 * after the endpoint's Retry-After or a jittered backoff, up to `maxRetries`
 * more times; then, or at once on a failure that is not transient, the turn
 * gets a ModelError with its code.
 */
export async function withRetries<T>(config: EndpointConfig, signal: AbortSignal, rules: RetryRules, attempt: () => Promise<T>): Promise<T> {
  const attempts = 1 + config.maxRetries;
  let failure: Failure | undefined;
  for (let n = 1; n <= attempts; n++) {
    if (failure) await abortableDelay(failure.retryAfterMs ?? backoffMs(n - 1, config.retryBaseMs ?? 500), signal);
    try {
      return await attempt();
    } catch (err) {
      if (signal.aborted || rules.isAbort(err)) throw signal.reason ?? err;
      failure = rules.classify(err);
      if (!failure.retry || n === attempts) throw giveUp(failure, n);
      rules.onRetry(failure, n);
    }
  }
  throw new ModelError('model_failed', 'no attempt was made');
}

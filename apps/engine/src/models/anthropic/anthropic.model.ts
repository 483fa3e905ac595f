import { Logger } from '@nestjs/common';
import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { DeltaGate } from '../delta-gate';
import { classifyStatus, classifyStreamFailure, StreamBrokenError, withRetries, type EndpointConfig, type Failure } from '../model.failures';
import { ModelError, type ModelAnswer, type ModelProvider, type ModelRequest } from '../model.provider';
import { MalformedAnswerError } from '../openai/openai.answer';
import { toAnthropicRequest } from './anthropic.messages';
import { readMessageStream } from './anthropic.stream';
import { touching, watchedAttempt } from '../stream-watchdog';

/** The `anthropic` provider's server-side configuration (ANTHROPIC_* variables, or a STEERLINE_MODELS endpoint); never taken from a request. */
export interface AnthropicConfig extends EndpointConfig {
  /** `max_tokens` of a request whose turn sets no maxOutputTokens (the API requires one). */
  maxTokens: number;
}

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';

/**
 * Claude through the Messages API, streamed, with tool use. Retries are ours
 * (as for openai): transient failures, including a stream that breaks
 * mid-answer, are tried again as a whole answer; a cancel aborts the stream.
 */
export class AnthropicModel implements ModelProvider {
  private readonly logger = new Logger('AnthropicModel');
  private readonly client: Anthropic;

  constructor(private readonly config: AnthropicConfig) {
    this.client = new Anthropic({
      // Explicit, so the SDK never reads ANTHROPIC_* from the environment on its own.
      baseURL: config.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL,
      apiKey: config.apiKey ?? null,
      authToken: null,
      ...(config.headers && { defaultHeaders: config.headers }),
      timeout: config.timeoutMs,
      maxRetries: 0,
    });
  }

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelAnswer> {
    // Read loosely: `anthropic` is not yet in the contract's ModelSpec (it needs TurnStarted v2; see README Decisions).
    const spec = request.model as { provider: string; name?: string };
    if (spec.provider !== 'anthropic' || !spec.name) throw new ModelError('model_failed', 'the anthropic provider got another provider’s request');
    const body = { model: spec.name, ...toAnthropicRequest(request, this.config.maxTokens), stream: true as const };
    const deltas = new DeltaGate(request.onDelta);
    const rules = {
      classify,
      isAbort: (err: unknown) => err instanceof APIUserAbortError,
      onRetry: (failure: Failure, attempt: number) =>
        this.logger.warn({ message: 'model request failed; retrying', model: spec.name, step: request.step, attempt, code: failure.code, error: failure.message }),
    };
    return withRetries(this.config, signal, rules, () =>
      watchedAttempt(signal, this.config.timeoutMs, async (attempt) => {
        deltas.restart();
        const stream = await this.client.messages.create(body, { signal: attempt.signal });
        attempt.touch();
        return readMessageStream(touching(stream, attempt.touch), request.step, (text) => deltas.push(text)).catch((err: unknown) => {
          throw attempt.signal.aborted || err instanceof MalformedAnswerError ? err : new StreamBrokenError(err);
        });
      }),
    );
  }
}

function classify(err: unknown): Failure {
  const stream = classifyStreamFailure(err);
  if (stream) return stream;
  if (err instanceof MalformedAnswerError) return { retry: true, code: 'model_malformed_answer', message: `the model answered with something unusable: ${err.message}` };
  if (err instanceof APIConnectionTimeoutError) return { retry: true, code: 'model_timeout', message: 'the model endpoint did not answer in time' };
  if (err instanceof APIConnectionError) return { retry: true, code: 'model_unavailable', message: `the model endpoint could not be reached: ${err.message}` };
  // 529 overloaded is a 5xx like any other.
  if (err instanceof APIError && typeof err.status === 'number') return classifyStatus(err.status, err.headers, err.message);
  return { retry: false, code: 'model_failed', message: (err as Error)?.message ?? String(err) };
}

import { Logger } from '@nestjs/common';
import OpenAI from 'openai';
import { ModelError, type ModelAnswer, type ModelProvider, type ModelRequest } from '../model.provider';
import { DeltaGate } from '../delta-gate';
import { answerOf } from './openai.answer';
import { StreamBrokenError, withRetries, type EndpointConfig, type Failure } from '../model.failures';
import { classify, isAbort } from './openai.failures';
import { toOpenAIMessages, toOpenAITools } from './openai.messages';
import { readCompletionStream } from './openai.stream';
import { touching, watchedAttempt } from '../stream-watchdog';

/** The `openai` provider's server-side configuration (OPENAI_* variables); never taken from a request. */
export type OpenAIConfig = EndpointConfig;

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * Any OpenAI-compatible chat-completions endpoint with tool calling (OpenAI,
 * Ollama, vLLM, llama.cpp, LM Studio). Retries are ours, not the SDK's, so the
 * rules are one place (see `classify`) and a cancel also ends a backoff.
 */
export class OpenAIModel implements ModelProvider {
  private readonly logger = new Logger('OpenAIModel');
  private readonly client: OpenAI;

  constructor(private readonly config: OpenAIConfig) {
    this.client = new OpenAI({
      // Explicit, so the SDK never falls back to reading OPENAI_* from the environment on its own.
      baseURL: config.baseUrl ?? OPENAI_DEFAULT_BASE_URL,
      // The SDK insists on a key; without one the header is removed below.
      apiKey: config.apiKey ?? 'unset',
      ...(config.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
      organization: null,
      project: null,
      timeout: config.timeoutMs,
      maxRetries: 0,
    });
  }

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelAnswer> {
    if (request.model.provider !== 'openai') throw new ModelError('model_failed', 'the openai provider got another provider’s request');
    const body = {
      model: request.model.name,
      messages: toOpenAIMessages(request.messages),
      // Some servers refuse an empty tools array.
      ...(request.tools.length ? { tools: toOpenAITools(request.tools) } : {}),
      // Streamed, so the answer shows while it is written (docs/design.md §11); usage comes in the last chunk.
      stream: true as const,
      stream_options: { include_usage: true },
    };
    const deltas = new DeltaGate(request.onDelta);
    const rules = {
      classify,
      isAbort: (err: unknown) => isAbort(err, signal),
      onRetry: (failure: Failure, attempt: number) =>
        this.logger.warn({ message: 'model request failed; retrying', model: request.model.name, step: request.step, attempt, code: failure.code, error: failure.message }),
    };
    return withRetries(this.config, signal, rules, () =>
      watchedAttempt(signal, this.config.timeoutMs, async (attempt) => {
        deltas.restart();
        const stream = await this.client.chat.completions.create(body, { signal: attempt.signal });
        attempt.touch();
        const completion = await readCompletionStream(touching(stream, attempt.touch), (text) => deltas.push(text)).catch((err: unknown) => {
          throw isAbort(err, attempt.signal) ? err : new StreamBrokenError(err);
        });
        return answerOf(completion, request.step);
      }),
    );
  }
}

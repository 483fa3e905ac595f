import type { Model, ModelProvider, ModelRequest, ModelResponse } from '@openai/agents';

/** What the adapter does with each model answer, before the Agents SDK acts on it (runs its tools). */
export interface AnswerSink {
  answer(response: { usage?: { inputTokens: number; outputTokens: number }; output: ModelResponse['output'] }): Promise<void>;
  delta(text: string): void;
}

/**
 * The model, unchanged, but every answer is reported to Steerline before the
 * runner sees it: Steerline then holds the step's tool calls before any of them
 * runs (a call that waits for approval must be known first). The Agents SDK has
 * no run hook between a model answer and its tools. Everything but the two calls
 * goes to the model itself (a Proxy, so private fields and `instanceof` still work).
 */
export function reportingModel(model: Model, sink: AnswerSink): Model {
  const getResponse = async (request: ModelRequest): Promise<ModelResponse> => {
    const response = await model.getResponse(request);
    await sink.answer(response);
    return response;
  };
  async function* getStreamedResponse(request: ModelRequest) {
    for await (const event of model.getStreamedResponse(request)) {
      if (event.type === 'output_text_delta') sink.delta(event.delta);
      if (event.type === 'response_done') await sink.answer({ usage: event.response.usage, output: event.response.output as ModelResponse['output'] });
      yield event;
    }
  }
  return new Proxy(model, {
    get(target, prop) {
      if (prop === 'getResponse') return getResponse;
      if (prop === 'getStreamedResponse') return getStreamedResponse;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Resolves model names as `provider` does, each model reporting its answers. */
export function reportingProvider(provider: ModelProvider, sink: AnswerSink): ModelProvider {
  return { getModel: async (name) => reportingModel(await provider.getModel(name), sink) };
}

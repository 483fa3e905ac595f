import type { Model, ModelProvider, ModelRequest, ModelResponse } from '@openai/agents';

/** What the adapter does with each model answer, before the Agents SDK acts on it (runs its tools). */
export interface AnswerSink {
  answer(response: Pick<ModelResponse, 'usage' | 'output'>): Promise<void>;
}

/**
 * The model, unchanged, but every answer is reported to Steerline before the
 * runner sees it: Steerline then holds the step's tool calls before any of them
 * runs (a call that waits for approval must be known first). The Agents SDK has
 * no run hook between a model answer and its tools. Everything but `getResponse`
 * goes to the model itself (a Proxy, so private fields and `instanceof` still work).
 * `turn.run` runs the SDK without `stream: true`, so only `getResponse` is called.
 */
export function reportingModel(model: Model, sink: AnswerSink): Model {
  const getResponse = async (request: ModelRequest): Promise<ModelResponse> => {
    const response = await model.getResponse(request);
    await sink.answer(response);
    return response;
  };
  return new Proxy(model, {
    get(target, prop) {
      if (prop === 'getResponse') return getResponse;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Resolves model names as `provider` does, each model reporting its answers. */
export function reportingProvider(provider: ModelProvider, sink: AnswerSink): ModelProvider {
  return { getModel: async (name) => reportingModel(await provider.getModel(name), sink) };
}

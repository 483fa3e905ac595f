import type { ChatMessage, ModelSpec, ToolCall, Usage } from '@steerline/contracts';

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  step: number;
  model: ModelSpec;
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[];
}

export interface ModelAnswer {
  text: string;
  toolCalls: ToolCall[];
  usage?: Usage;
}

/** A model behind one interface; `signal` aborts the call when the turn is cancelled. */
export interface ModelProvider {
  complete(request: ModelRequest, signal: AbortSignal): Promise<ModelAnswer>;
}

/** A model call that failed; the turn fails with this code. */
export class ModelError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

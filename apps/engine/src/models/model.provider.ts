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
  /**
   * Text as it is produced (docs/design.md §11), for live output only: joined, the
   * deltas of an answer are its text. A provider that retries a broken stream
   * sends nothing of the failed attempt it has not sent already — so it must
   * buffer or only stream an attempt it keeps.
   */
  onDelta?: (text: string) => void;
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

import { abortableDelay } from '../models/abortable-delay';
import type { ToolSpec } from '../models/model.provider';

/** Which call of which turn a tool runs for; remote tools pass it on to their service. */
export interface ToolCallContext {
  tenantId: string;
  conversationId: string;
  turnId: string;
  step: number;
  toolCallId: string;
  /** Reports how the call is going (live output, DESIGN §8.1); cheap, never awaited. */
  progress?: (report: { progress?: number; message?: string }) => void;
}

export interface Tool {
  spec: ToolSpec;
  run(args: Record<string, unknown>, signal: AbortSignal, call?: ToolCallContext): Promise<unknown>;
}

/** Tools that come and go while the engine runs (remote tools served over NATS). */
export interface ToolSource {
  list(): Tool[];
  get(name: string): Tool | undefined;
}

/**
 * A tool that failed; its message becomes the tool result's error, which the
 * model sees. A `fatal` one fails the turn (DESIGN §2.8: `turn_failed`).
 */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly fatal = false,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

const MAX_SLEEP_MS = 10 * 60 * 1000;
const SLEEP_PROGRESS_MS = 400;

export const BUILTIN_TOOLS: Tool[] = [
  {
    spec: {
      name: 'sleep',
      description: 'Waits the given number of milliseconds.',
      parameters: { type: 'object', properties: { ms: { type: 'integer', minimum: 0, maximum: MAX_SLEEP_MS } }, required: ['ms'] },
    },
    async run(args, signal, call) {
      const ms = Number(args.ms);
      if (!Number.isInteger(ms) || ms < 0 || ms > MAX_SLEEP_MS) throw new ToolError('invalid_arguments', `ms must be an integer from 0 to ${MAX_SLEEP_MS}`);
      // Progress at least every 500 ms (DESIGN §8.1): the sleep is cut into slices.
      const started = Date.now();
      call?.progress?.({ progress: 0, message: `0 of ${ms} ms` });
      for (let slept = 0; slept < ms; slept = Date.now() - started) {
        await abortableDelay(Math.min(SLEEP_PROGRESS_MS, ms - slept), signal);
        const done = Math.min(ms, Date.now() - started);
        call?.progress?.({ progress: ms === 0 ? 1 : done / ms, message: `${done} of ${ms} ms` });
      }
      return `slept ${ms} ms`;
    },
  },
  {
    spec: {
      name: 'echo',
      description: 'Returns its text.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
    async run(args) {
      if (typeof args.text !== 'string') throw new ToolError('invalid_arguments', 'text must be a string');
      return args.text;
    },
  },
  {
    spec: {
      name: 'fail',
      description: 'Always fails with the given message, and with it the turn.',
      parameters: { type: 'object', properties: { message: { type: 'string' } } },
    },
    async run(args) {
      throw new ToolError('tool_failed', typeof args.message === 'string' ? args.message : 'failed on purpose', true);
    },
  },
];

/**
 * The tools offered to models: the built-ins (`STEERLINE_BUILTIN_TOOLS` may name
 * fewer) and whatever the remote source knows now. A built-in shadows a remote
 * tool of the same name, so a service cannot take over `sleep` or `fail`.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  constructor(
    tools: Tool[] = BUILTIN_TOOLS,
    private readonly remote?: ToolSource,
  ) {
    for (const tool of tools) this.tools.set(tool.spec.name, tool);
  }

  specs(): ToolSpec[] {
    const remote = (this.remote?.list() ?? []).filter((t) => !this.tools.has(t.spec.name));
    return [...this.tools.values(), ...remote].map((t) => t.spec);
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name) ?? this.remote?.get(name);
  }
}

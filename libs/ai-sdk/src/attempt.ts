import type { AssistantModelMessage, LanguageModelCallEndEvent, LanguageModelUsage, ModelMessage, StepResult, TextStreamPart, ToolModelMessage, ToolSet, UserModelMessage } from 'ai';
import { reportStop, StepAnswer, TurnEnded, UnreportedCalls, type DeliveredSteer, type ExternalTurn, type RunnerCut, type RunnerNext, type RunnerToolResult, type ToolCall } from '@steerline/client';

/**
 * What `turn.run` hands the function that calls `generateText` or `streamText`:
 * spread it into the call (`generateText({ model, tools, ...hooks })`).
 */
export interface SteerlineHooks {
  /** The turn's prompt as a user message; for a continuation, the conversation so far and the steers. */
  messages: ModelMessage[];
  /** Before each model call: reports the previous step's tool results and adds the steers due as user messages. */
  prepareStep: (options: { stepNumber: number; steps: ReadonlyArray<StepResult<ToolSet>>; messages: ModelMessage[] }) => Promise<{ messages: ModelMessage[] }>;
  /**
   * After each model call, before the AI SDK runs the step's tools: reports the
   * answer (text, tool calls, usage). `onStepFinish` comes only once the tools
   * have run, too late for a tool that waits for approval.
   */
  onLanguageModelCallEnd: (event: LanguageModelCallEndEvent<ToolSet>) => Promise<void>;
  /** After each step: keeps its response messages, the start of a continuation's conversation. */
  onStepFinish: (step: StepResult<ToolSet>) => void;
  /** `streamText` only: publishes the text deltas that SSE watchers and the console show live. */
  onChunk: (event: { chunk: TextStreamPart<ToolSet> }) => void;
  /** `streamText` only: keeps the stream's error, the one the turn then fails with (its result only says "no output"). */
  onError: (event: { error: unknown }) => void;
  /** Aborted when the turn is cancelled from any client, when Steerline refuses a report, or when an urgent steer asks to stop the step (then `run` reports the stop and goes on). */
  abortSignal: AbortSignal;
}

/** What a finished call of the user's function leads to. */
export type AttemptOutcome = { next: 'continue'; step: number; messages: ModelMessage[] } | { next: 'done' };

/**
 * One call of the user's function: the AI SDK's loop from its step 0 on, which
 * is Steerline's model request `step` on. A continuation is a new attempt.
 *
 * The AI SDK swallows what its callbacks throw, so a refused report is kept
 * here, aborts the call, and `outcome` throws it once the call has returned.
 */
export class Attempt {
  private readonly controller = new AbortController();
  /** What the current model request was sent, the steers added, and what it answered. */
  private sent: ModelMessage[] = [];
  private response: ModelMessage[] = [];
  private refused: unknown;
  /** What streamText's stream failed with. */
  streamError: unknown;
  private last: RunnerNext | undefined;
  /** What the current request's answer has streamed so far, and the answer once reported. */
  private written = '';
  private answered: { text: string; toolCalls: ToolCall[] } | undefined;
  /** The calls of a stopped step that had finished: their results stand. */
  private finishedBeforeStop: RunnerToolResult[] = [];
  /** The turn's interrupt signal when this attempt began: an urgent steer's stop of one of its steps. */
  private readonly interruption: AbortSignal;
  readonly answer = new StepAnswer();

  constructor(
    private readonly turn: ExternalTurn,
    /** Steerline's number of the model request this attempt starts with (already requested). */
    private step: number,
    private readonly messages: ModelMessage[],
  ) {
    this.interruption = turn.interruptSignal;
  }

  hooks(): SteerlineHooks {
    return {
      messages: this.messages,
      abortSignal: AbortSignal.any([this.turn.signal, this.controller.signal, this.interruption]),
      prepareStep: async ({ stepNumber, steps, messages }) => {
        let steers: DeliveredSteer[] = [];
        if (stepNumber > 0) {
          const results = toolResultsOf(steps[stepNumber - 1]).filter((r) => !this.answer.isDenied(r.toolCallId));
          if (this.interruption.aborted) {
            // Stopped for an urgent steer: the calls that finished keep their results, the rest end interrupted (`resume`).
            this.finishedBeforeStop = results.filter((r) => r.ok);
            throw this.interruption.reason;
          }
          const next = await this.turn.reportResults(this.step, results);
          if (next.next === 'end') throw new TurnEnded(next);
          if (next.next === 'tools') throw new UnreportedCalls(next);
          this.step = next.step;
          steers = next.steers;
        }
        this.answer.next();
        this.response = [];
        this.written = '';
        this.answered = undefined;
        this.sent = [...messages, ...steers.map(steerMessage)];
        return { messages: this.sent };
      },
      onLanguageModelCallEnd: async (event) => {
        if (this.refused) return;
        try {
          const usage = usageOf(event.usage);
          const answered = {
            text: event.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(''),
            // Invalid calls too (arguments that do not parse, an unknown tool): the AI SDK answers each with a tool error the record keeps.
            toolCalls: event.content.flatMap((p) => (p.type === 'tool-call' ? [{ id: p.toolCallId, name: p.toolName, args: asArgs(p.input) }] : [])),
          };
          this.last = await this.turn.reportAnswer({ step: this.step, ...answered, ...(usage ? { usage } : {}) });
          this.answered = answered;
          // Tool calls answered `end`: the turn ended meanwhile (a cancel); the tools must not run.
          if (this.last.next === 'end' && event.content.some((p) => p.type === 'tool-call')) this.refuse(new TurnEnded(this.last));
          this.answer.reported();
        } catch (err) {
          this.refuse(err);
        }
      },
      onStepFinish: (step) => {
        this.response = step.response.messages;
      },
      onChunk: ({ chunk }) => {
        if (chunk.type !== 'text-delta') return;
        this.written += chunk.text;
        this.turn.publishDelta(this.step, chunk.text);
      },
      onError: ({ error }) => {
        this.streamError ??= error;
      },
    };
  }

  /**
   * After the call returned: a continuation (the conversation so far: the last
   * request, its response and the steers), or done. Throws a refused report.
   */
  outcome(): AttemptOutcome {
    if (this.refused) throw this.refused;
    const last = this.last;
    if (last?.next === 'model') return { next: 'continue', step: last.step, messages: [...this.sent, ...this.response, ...last.steers.map(steerMessage)] };
    if (last?.next === 'end') {
      if (last.status !== 'completed') throw new TurnEnded(last);
      return { next: 'done' };
    }
    // The AI SDK stopped with tool calls still to answer: its stop condition (stopWhen) ended the loop.
    throw new UnreportedCalls(last);
  }

  /** Whether the call ended because an urgent steer asked to stop one of its steps (not a cancel, not a refused report). */
  interrupted(): boolean {
    return this.interruption.aborted && !this.turn.signal.aborted && this.refused === undefined;
  }

  /**
   * After the call stopped for an urgent steer: reports the stop (what the answer had streamed, or
   * the calls it left), then the continuation Steerline decided — the request so far, what the cut
   * left of the step (the answer's calls and their recorded results, or the cut answer's message),
   * and the steers. When the step had ended first, its own outcome.
   */
  async resume(): Promise<AttemptOutcome> {
    const stopped = this.answered ? { results: this.finishedBeforeStop } : { partialText: this.written };
    const after = await reportStop(this.turn, { step: this.step, ...stopped, answered: this.answered !== undefined, last: this.last });
    if (after.next === 'done') return after;
    if (after.next === 'resend') return { next: 'continue', step: this.step, messages: this.sent };
    return { next: 'continue', step: after.step, messages: [...this.sent, ...stepMessages(this.answered, after.cut), ...after.steers.map(steerMessage)] };
  }

  private refuse(err: unknown): void {
    this.refused = err;
    this.answer.refused(err);
    this.controller.abort(err);
  }
}

/** A delivered steer as the model reads it: its own user message, Steerline's rendering of the text. */
function steerMessage(steer: DeliveredSteer): UserModelMessage {
  return { role: 'user', content: steer.rendered };
}

/** What a stopped step leaves in the conversation: its answer and its calls' recorded results, or the cut answer's message. */
function stepMessages(answered: { text: string; toolCalls: ToolCall[] } | undefined, cut: RunnerCut | undefined): ModelMessage[] {
  if (!answered) return cut?.text ? [{ role: 'assistant', content: cut.text }] : [];
  const assistant: AssistantModelMessage = {
    role: 'assistant',
    content: [...(answered.text ? [{ type: 'text' as const, text: answered.text }] : []), ...answered.toolCalls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: c.args }))],
  };
  if (answered.toolCalls.length === 0) return [assistant];
  const recorded = new Map((cut?.results ?? []).map((r) => [r.toolCallId, r]));
  const tool: ToolModelMessage = {
    role: 'tool',
    content: answered.toolCalls.map((c) => {
      const r = recorded.get(c.id);
      const output = r?.ok ? { type: 'json' as const, value: (r.output ?? null) as never } : { type: 'error-text' as const, value: r?.error?.message ?? 'the call was interrupted by a steer' };
      return { type: 'tool-result' as const, toolCallId: c.id, toolName: c.name, output };
    }),
  };
  return [assistant, tool];
}

/** A step's tool results and tool errors, in the shape Steerline records (ToolCallFinished). */
function toolResultsOf(step: StepResult<ToolSet> | undefined): RunnerToolResult[] {
  const results: RunnerToolResult[] = [];
  for (const part of step?.content ?? []) {
    if (part.type === 'tool-result') results.push({ toolCallId: part.toolCallId, ok: true, output: part.output });
    else if (part.type === 'tool-error') results.push({ toolCallId: part.toolCallId, ok: false, error: { code: 'tool_error', message: messageOf(part.error) } });
  }
  return results;
}

function usageOf(usage: LanguageModelUsage): { inputTokens: number; outputTokens: number } | undefined {
  if (usage.inputTokens === undefined && usage.outputTokens === undefined) return undefined;
  return { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 };
}

function asArgs(input: unknown): Record<string, unknown> {
  return input && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : { input };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

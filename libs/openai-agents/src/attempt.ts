import type { AgentInputItem, CallModelInputFilter, ModelResponse, RunHookEvents } from '@openai/agents';
import { reportStop, StepAnswer, TurnEnded, UnreportedCalls, type DeliveredSteer, type ExternalTurn, type RunnerCut, type RunnerNext, type RunnerToolResult } from '@steerline/client';
import type { AnswerSink } from './reporting-model';

/** A steer delivered into a model request: its user message, after the first `at` items of the SDK's own input. */
interface Placed {
  at: number;
  item: AgentInputItem;
}

/**
 * One `Runner.run` of the turn: from the model request `step` on (already
 * requested), until the model answers without tool calls. A continuation is a new
 * attempt on the conversation so far.
 *
 * The Agents SDK rebuilds each request from the run's input and the items it
 * generated, so a steer added by `callModelInputFilter` is gone from the next
 * request: this attempt keeps every delivered steer at its place and adds them
 * all again each time.
 */
export class Attempt implements AnswerSink {
  private readonly placed: Placed[] = [];
  /** The step's results, from the `agent_tool_end` hook, reported before the next request. */
  private results: RunnerToolResult[] = [];
  private last: RunnerNext | undefined;
  /** The current request's input as sent (steers in place), and its answer's items once reported. */
  private sent: AgentInputItem[] = [];
  private answered: { output: AgentInputItem[]; calls: { callId: string; name: string }[] } | undefined;
  private refused = false;
  /** The calls of a stopped step that had finished: their results stand. */
  private finishedBeforeStop: RunnerToolResult[] = [];
  /** The turn's interrupt signal when this attempt began: an urgent steer's stop of one of its steps. */
  readonly interruption: AbortSignal;
  readonly reported = new StepAnswer();

  constructor(
    private readonly turn: ExternalTurn,
    private step: number,
  ) {
    this.interruption = turn.interruptSignal;
  }

  /** The run config's `callModelInputFilter`: reports the previous step's results, adds the steers due. */
  readonly filter: CallModelInputFilter = async ({ modelData }) => {
    if (this.last?.next === 'tools' && this.interruption.aborted) {
      // Stopped for an urgent steer: the calls that finished keep their results, the rest end interrupted (`resume`).
      this.finishedBeforeStop = this.results;
      throw this.interruption.reason;
    }
    if (this.last?.next === 'tools') {
      const next = await this.turn.reportResults(this.step, this.results);
      this.results = [];
      if (next.next === 'end') throw new TurnEnded(next);
      if (next.next === 'tools') throw new UnreportedCalls(next);
      this.step = next.step;
      this.placed.push(...next.steers.map((s) => ({ at: modelData.input.length, item: steerItem(s) })));
    }
    this.last = undefined;
    this.answered = undefined;
    this.reported.next();
    this.sent = withSteers(modelData.input, this.placed);
    return { ...modelData, input: this.sent };
  };

  /** The `agent_tool_end` run hook: a function tool's result. */
  readonly toolEnded = (...[, , , result, { toolCall }]: RunHookEvents<any, any>['agent_tool_end']) => {
    // Once an urgent steer stops the step, a call's end is its abort (the SDK gives it an error text as output): it ends interrupted.
    if (this.interruption.aborted) return;
    if (toolCall.type === 'function_call' && !this.reported.isDenied(toolCall.callId)) this.results.push({ toolCallId: toolCall.callId, ok: true, output: result });
  };

  async answer(response: Pick<ModelResponse, 'usage' | 'output'>): Promise<void> {
    const toolCalls = response.output.flatMap((item) => (item.type === 'function_call' ? [{ id: item.callId, name: item.name, args: parseArgs(item.arguments) }] : []));
    const text = response.output.flatMap((item) => (item.type === 'message' && item.role === 'assistant' ? item.content.flatMap((c) => (c.type === 'output_text' ? [c.text] : [])) : [])).join('');
    const usage = response.usage ? { inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens } : undefined;
    try {
      this.last = await this.turn.reportAnswer({ step: this.step, text, toolCalls, ...(usage ? { usage } : {}) });
    } catch (err) {
      this.refused = true;
      this.reported.refused(err);
      throw err;
    }
    this.answered = { output: response.output as AgentInputItem[], calls: toolCalls.map((c) => ({ callId: c.id, name: c.name })) };
    this.reported.reported();
    // Tool calls answered `end`: the turn ended meanwhile (a cancel); the tools must not run.
    if (this.last.next === 'end' && toolCalls.length > 0) throw new TurnEnded(this.last);
  }

  /** After the run returned: the input for a continuation (its history, the steers in place and the new ones), or done. */
  outcome(history: AgentInputItem[]): { next: 'continue'; step: number; input: AgentInputItem[] } | { next: 'done' } {
    const last = this.last;
    if (last?.next === 'model') return { next: 'continue', step: last.step, input: [...withSteers(history, this.placed), ...last.steers.map(steerItem)] };
    if (last?.next === 'end') {
      if (last.status !== 'completed') throw new TurnEnded(last);
      return { next: 'done' };
    }
    throw new UnreportedCalls(last);
  }

  /** Whether the run ended because an urgent steer asked to stop one of its steps (not a cancel, not a refused report). */
  interrupted(): boolean {
    return this.interruption.aborted && !this.turn.signal.aborted && !this.refused;
  }

  /**
   * After the run stopped for an urgent steer: reports the stop (an answer not reported, or the
   * calls it left), then the continuation Steerline decided — the input as sent, what the cut left
   * of the step (the answer's items and its calls' recorded results, or the cut answer's message),
   * and the steers. When the step had ended first, its own outcome.
   */
  async resume(): Promise<{ next: 'continue'; step: number; input: AgentInputItem[] } | { next: 'done' }> {
    // The Agents SDK's answer is not streamed here: a cut answer had written nothing the runner saw.
    const stopped = this.answered ? { results: this.finishedBeforeStop } : {};
    const after = await reportStop(this.turn, { step: this.step, ...stopped, answered: this.answered !== undefined, last: this.last });
    if (after.next === 'done') return after;
    if (after.next === 'resend') return { next: 'continue', step: this.step, input: this.sent };
    return { next: 'continue', step: after.step, input: [...this.sent, ...stepItems(this.answered, after.cut), ...after.steers.map(steerItem)] };
  }
}

/** What a stopped step leaves in the conversation: its answer's items and its calls' recorded results, or the cut answer's message. */
function stepItems(answered: { output: AgentInputItem[]; calls: { callId: string; name: string }[] } | undefined, cut: RunnerCut | undefined): AgentInputItem[] {
  if (!answered) return cut?.text ? [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: cut.text }] }] : [];
  const recorded = new Map((cut?.results ?? []).map((r) => [r.toolCallId, r]));
  const results = answered.calls.map(({ callId, name }): AgentInputItem => {
    const r = recorded.get(callId);
    const output = r?.ok ? (typeof r.output === 'string' ? r.output : JSON.stringify(r.output ?? null)) : (r?.error?.message ?? 'the call was interrupted by a steer');
    return { type: 'function_call_result', name, callId, status: 'completed', output };
  });
  return [...answered.output, ...results];
}

function steerItem(steer: DeliveredSteer): AgentInputItem {
  return { type: 'message', role: 'user', content: steer.rendered };
}

function withSteers(input: AgentInputItem[], placed: Placed[]): AgentInputItem[] {
  if (placed.length === 0) return input;
  const out: AgentInputItem[] = [];
  let i = 0;
  for (const { at, item } of placed) {
    while (i < at && i < input.length) out.push(input[i++]);
    out.push(item);
  }
  return [...out, ...input.slice(i)];
}

function parseArgs(raw: string): Record<string, unknown> {
  try {
    const args: unknown = JSON.parse(raw || '{}');
    return args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : { input: args };
  } catch {
    // The model wrote arguments that are not JSON: Steerline records them as given.
    return { input: raw };
  }
}

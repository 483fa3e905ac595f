import type { AgentInputItem, CallModelInputFilter, ModelResponse, RunHookEvents } from '@openai/agents';
import { StepAnswer, TurnEnded, UnreportedCalls, type DeliveredSteer, type ExternalTurn, type RunnerNext, type RunnerToolResult } from '@steerline/client';
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
  readonly reported = new StepAnswer();

  constructor(
    private readonly turn: ExternalTurn,
    private step: number,
  ) {}

  /** The run config's `callModelInputFilter`: reports the previous step's results, adds the steers due. */
  readonly filter: CallModelInputFilter = async ({ modelData }) => {
    if (this.last?.next === 'tools') {
      const next = await this.turn.reportResults(this.step, this.results);
      this.results = [];
      if (next.next === 'end') throw new TurnEnded(next);
      if (next.next === 'tools') throw new UnreportedCalls(next);
      this.step = next.step;
      this.placed.push(...next.steers.map((s) => ({ at: modelData.input.length, item: steerItem(s) })));
    }
    this.last = undefined;
    this.reported.next();
    return { ...modelData, input: withSteers(modelData.input, this.placed) };
  };

  /** The `agent_tool_end` run hook: a function tool's result. */
  readonly toolEnded = (...[, , , result, { toolCall }]: RunHookEvents<any, any>['agent_tool_end']) => {
    if (toolCall.type === 'function_call' && !this.reported.isDenied(toolCall.callId)) this.results.push({ toolCallId: toolCall.callId, ok: true, output: result });
  };

  async answer(response: Pick<ModelResponse, 'usage' | 'output'>): Promise<void> {
    const toolCalls = response.output.flatMap((item) => (item.type === 'function_call' ? [{ id: item.callId, name: item.name, args: parseArgs(item.arguments) }] : []));
    const text = response.output.flatMap((item) => (item.type === 'message' && item.role === 'assistant' ? item.content.flatMap((c) => (c.type === 'output_text' ? [c.text] : [])) : [])).join('');
    const usage = response.usage ? { inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens } : undefined;
    try {
      this.last = await this.turn.reportAnswer({ step: this.step, text, toolCalls, ...(usage ? { usage } : {}) });
    } catch (err) {
      this.reported.refused(err);
      throw err;
    }
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

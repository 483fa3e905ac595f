import { Runner, type Agent, type AgentInputItem, type RunConfig, type RunResult } from '@openai/agents';
import { failFor, TurnEnded, type ApprovalOutcome, type ExternalTurn } from '@steerline/client';
import { Attempt } from './attempt';
import { reportingModel, reportingProvider } from './reporting-model';

export interface TurnRunOptions<TContext> {
  /** Your run config (model provider, guardrails, tracing…); a `callModelInputFilter` of yours runs before Steerline's. */
  runConfig?: Partial<RunConfig>;
  context?: TContext;
  /** The Agents SDK's limit of model calls per run (its default: 10). Steerline's own `maxSteps` applies too. */
  maxTurns?: number;
}

/**
 * A turn whose loop this process runs with the OpenAI Agents SDK. Steerline keeps
 * its record and its steering: `run` reports every model answer and tool result
 * and adds the steers due to each model request.
 */
export class SteerlineTurn {
  private attempt: Attempt | undefined;

  constructor(
    /** The runner side of the turn (`@steerline/client`): lease, reports, approvals, live output. */
    readonly external: ExternalTurn,
    readonly conversationId: string,
  ) {}

  get id(): string {
    return this.external.turnId;
  }

  /** Aborted when any client cancels the turn, or the runner lost it. */
  get signal(): AbortSignal {
    return this.external.signal;
  }

  /**
   * Runs `agent` on `input` (the turn's prompt, or items that end with it) with
   * `Runner.run`, and runs it again for each continuation Steerline decides.
   * Resolves with the last run's result once Steerline has completed the turn.
   * A thrown error fails the turn; a cancel rejects with the SDK's abort error.
   */
  async run<TAgent extends Agent<any, any>, TContext = undefined>(agent: TAgent, input: string | AgentInputItem[], options: TurnRunOptions<TContext> = {}): Promise<RunResult<TContext, TAgent>> {
    let items: AgentInputItem[] = typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : input;
    // Step 1 was requested when the turn started.
    let step = 1;
    try {
      for (;;) {
        const attempt = (this.attempt = new Attempt(this.external, step));
        const result = await this.runner(attempt, options.runConfig)
          .run(this.reporting(agent, attempt), items, {
            context: options.context,
            maxTurns: options.maxTurns,
            signal: AbortSignal.any([this.signal, attempt.interruption]),
          })
          .catch((err: unknown) => {
            if (attempt.interrupted()) return undefined;
            throw err;
          });
        // An urgent steer stopped a step (docs/runner-protocol.md, "Interrupts"): the stop is reported, and the turn goes on.
        const outcome = attempt.interrupted() ? await attempt.resume() : attempt.outcome(result!.history);
        if (outcome.next === 'done') {
          if (result === undefined) throw new TurnEnded({ next: 'end', status: 'completed' });
          return result as RunResult<TContext, TAgent>;
        }
        ({ step, input: items } = outcome);
      }
    } catch (err) {
      await failFor(this.external, err);
      throw err;
    } finally {
      this.external.close();
    }
  }

  /**
   * Waits for the decision on a tool call of a tool the turn's `approvals` list
   * (the same API, events and console as for Steerline's own turns). Call it
   * from the tool's `execute` with the call it was given
   * (`execute: async (args, ctx, details) => { await turn.approval(details.toolCall) … }`).
   * Denied: return something short; Steerline has recorded the call as denied already.
   */
  approval(toolCall: { callId: string } | { toolCallId: string }): Promise<ApprovalOutcome> {
    if (!this.attempt) throw new Error('turn.approval(call) is for the tools of a running turn.run');
    return this.attempt.reported.approval(this.external, 'callId' in toolCall ? toolCall.callId : toolCall.toolCallId);
  }

  /** A runner for one attempt: its filter adds the steers, its hook collects tool results, its models report answers. */
  private runner(attempt: Attempt, config: Partial<RunConfig> = {}): Runner {
    const base = new Runner(config);
    const own = config.callModelInputFilter;
    const runner = new Runner({
      ...config,
      modelProvider: reportingProvider(base.config.modelProvider, attempt),
      ...(config.model && typeof config.model !== 'string' ? { model: reportingModel(config.model, attempt) } : {}),
      callModelInputFilter: own ? async (args) => attempt.filter({ ...args, modelData: await own(args) }) : attempt.filter,
    });
    runner.on('agent_tool_end', attempt.toolEnded);
    return runner;
  }

  /** The agent, its model instance (if it has one rather than a name) reporting its answers. */
  private reporting<TAgent extends Agent<any, any>>(agent: TAgent, attempt: Attempt): TAgent {
    return typeof agent.model === 'string' ? agent : (agent.clone({ model: reportingModel(agent.model, attempt) }) as TAgent);
  }
}

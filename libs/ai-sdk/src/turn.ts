import type { ModelMessage } from 'ai';
import { failFor, TurnEnded, type ApprovalOutcome, type ExternalTurn } from '@steerline/client';
import { Attempt, type SteerlineHooks } from './attempt';

/**
 * A turn whose loop this process runs with the AI SDK. Steerline keeps its record
 * and its steering: `run` reports every step and adds the steers due.
 */
export class SteerlineTurn {
  private attempt: Attempt | undefined;

  constructor(
    /** The runner side of the turn (`@steerline/client`): lease, reports, approvals, live output. */
    readonly external: ExternalTurn,
    readonly conversationId: string,
    private readonly prompt: string,
  ) {}

  get id(): string {
    return this.external.turnId;
  }

  /** Aborted when any client cancels the turn, or the runner lost it. */
  get signal(): AbortSignal {
    return this.external.signal;
  }

  /**
   * Runs the turn: calls `generate` with the hooks to spread into `generateText`
   * or `streamText`, and again for each continuation Steerline decides (steers
   * that came while the model wrote a text-only answer). Resolves with the last
   * call's result once Steerline has completed the turn. A thrown error fails
   * the turn; a cancel rejects with the framework's abort error.
   */
  async run<R>(generate: (hooks: SteerlineHooks) => R): Promise<Awaited<R>> {
    let messages: ModelMessage[] = [{ role: 'user', content: this.prompt }];
    // Step 1 was requested when the turn started.
    let step = 1;
    try {
      for (;;) {
        const attempt = (this.attempt = new Attempt(this.external, step, messages));
        const result = await finished(generate(attempt.hooks())).catch((err: unknown) => {
          if (attempt.interrupted()) return undefined;
          throw err;
        });
        // An urgent steer stopped a step (docs/runner-protocol.md, "Interrupts"): the stop is reported, and the turn goes on.
        const outcome = attempt.interrupted() ? await attempt.resume() : attempt.outcome();
        if (outcome.next === 'done') {
          if (result === undefined) throw new TurnEnded({ next: 'end', status: 'completed' });
          return result;
        }
        ({ step, messages } = outcome);
      }
    } catch (err) {
      const cause = this.attempt?.streamError ?? err;
      await failFor(this.external, cause);
      throw cause;
    } finally {
      this.external.close();
    }
  }

  /**
   * Waits for the decision on a tool call of a tool the turn's `approvals` list
   * (the same API, events and console as for Steerline's own turns). Call it
   * from the tool's `execute` with the options it was given:
   * `const { decision } = await turn.approval(options)`. Denied: return
   * something short; Steerline has recorded the call as denied already.
   */
  approval(toolCall: { toolCallId: string }): Promise<ApprovalOutcome> {
    if (!this.attempt) throw new Error('turn.approval(call) is for the tools of a running turn.run');
    return this.attempt.answer.approval(this.external, toolCall.toolCallId);
  }
}

/**
 * The function's result once its generation is over: `generateText`'s promise,
 * or a `streamText` result returned as is, whose `steps` settles once its stream
 * has run (reading `steps` consumes the stream).
 */
async function finished<R>(out: R): Promise<Awaited<R>> {
  const result = await out;
  await (result as { steps?: unknown } | undefined)?.steps;
  return result;
}

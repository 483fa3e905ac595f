import { SteerlineClientError } from './errors';
import type { RunnerEnd, RunnerNext } from './types';

// Shared by the framework adapters (@steerline/ai-sdk, @steerline/openai-agents): what a runner's loop
// throws when Steerline and the framework disagree about what comes next.

/** Steerline ended the turn while the framework's loop was still going (a cancel, `max_steps`, a failure). */
export class TurnEnded extends SteerlineClientError {
  constructor(readonly end: RunnerEnd) {
    super(end.error?.code ?? (end.status === 'cancelled' ? 'turn_cancelled' : 'turn_not_running'), end.error?.message ?? end.reason ?? `the turn ${end.status}`, 409, { ...end });
    this.name = 'TurnEnded';
  }
}

/** The framework's loop stopped (its own stop condition) while Steerline waits for tool results. */
export class UnreportedCalls extends Error {
  readonly code = 'stopped_with_tool_calls';
  constructor(readonly next: RunnerNext | undefined) {
    super(`the agent's loop stopped while Steerline waits for ${next?.next === 'tools' ? `the results of ${next.calls.filter((c) => !c.finished).map((c) => c.toolCallId).join(', ')}` : 'a model answer'}`);
    this.name = 'UnreportedCalls';
  }
}

/**
 * Fails the turn for an error the runner's loop threw, unless Steerline ended it
 * first (then there is nothing to fail). The code is the error's own when it is a
 * lower-case token, `runner_error` otherwise.
 */
export async function failFor(turn: { signal: AbortSignal; fail(code: string, message: string): Promise<unknown> }, err: unknown): Promise<void> {
  if (err instanceof TurnEnded || turn.signal.aborted) return;
  const code = (err as { code?: unknown } | undefined)?.code;
  const message = (err instanceof Error ? err.message : String(err)).slice(0, 2_000) || 'the runner failed';
  // A fail that comes too late (the turn ended meanwhile) changes nothing: the turn's end stands.
  await turn.fail(typeof code === 'string' && /^[a-z0-9_]{1,64}$/.test(code) ? code : 'runner_error', message).catch(() => undefined);
}

import { SteerlineClient, type ClientOptions } from './client';
import { SteerlineClientError } from './errors';
import type { ApprovalOutcome, ExternalTurn, InterruptedReport } from './runner';
import type { DeliveredSteer, ExternalTurnInput, RunnerCut, RunnerEnd, RunnerNext } from './types';

// What the framework adapters (@steerline/ai-sdk, @steerline/openai-agents) are built on, written once:
// the start of a turn they run, the wait for approvals, and the errors of a loop that Steerline and the
// framework disagree about.

export interface StartExternalTurnOptions extends ExternalTurnInput {
  conversationId: string;
}

/** An adapter's entry: the typed client, and the start of turns this process runs. */
export class ExternalTurns {
  /** The typed client of the whole API: steer, receipts, events, cancel. */
  readonly client: SteerlineClient;

  constructor(opts: ClientOptions | { client: SteerlineClient }) {
    this.client = 'client' in opts ? opts.client : new SteerlineClient(opts);
  }

  /** Starts a turn that this process runs (`"runner": "external"`), holding its runner lease until it ends. */
  protected start({ conversationId, ...input }: StartExternalTurnOptions): Promise<ExternalTurn> {
    return this.client.startExternalTurn(conversationId, input);
  }
}

/**
 * The current step's answer as an adapter reported it: a tool that asks for
 * approval waits until Steerline holds the step's calls (a framework may start
 * a tool before its model's answer is complete). Calls a person denied keep
 * Steerline's `denied` result; their tools' own results are not reported.
 */
export class StepAnswer {
  private answer = deferred();
  private readonly denied = new Set<string>();

  /** A new model request: its answer is not reported yet. */
  next(): void {
    this.answer = deferred();
  }

  reported(): void {
    this.answer.resolve();
  }

  refused(err: unknown): void {
    this.answer.reject(err);
  }

  isDenied(toolCallId: string): boolean {
    return this.denied.has(toolCallId);
  }

  /** `turn.approval(call)` of an adapter: once the answer is reported, waits for the decision. */
  async approval(turn: ExternalTurn, toolCallId: string): Promise<ApprovalOutcome> {
    await this.answer.promise;
    const outcome = await turn.approval(toolCallId, { signal: turn.signal });
    if (outcome.decision === 'denied') this.denied.add(toolCallId);
    return outcome;
  }
}

/** Where an adapter's loop goes after it stopped a step for an urgent steer. */
export type AfterStop =
  | { next: 'done' }
  /** Nothing was cut (the step had ended first): the request in flight, its steers in it already, is sent again. */
  | { next: 'resend' }
  /** Request `step`: what the cut left of the stopped step (`cut`), then `steers`. */
  | { next: 'continue'; step: number; steers: DeliveredSteer[]; cut?: RunnerCut };

/**
 * After the framework's step stopped for an urgent steer (docs/runner-protocol.md, "Interrupts"):
 * reports the stop unless the step's answer was reported and answered already (`last`, not `tools`),
 * and says where the loop goes. Throws `TurnEnded` for a turn that did not complete.
 */
export async function reportStop(turn: ExternalTurn, stop: InterruptedReport & { answered: boolean; last: RunnerNext | undefined }): Promise<AfterStop> {
  const { answered, last, ...report } = stop;
  const next = answered && last?.next !== 'tools' ? last : await turn.reportInterrupted(report);
  if (next?.next === 'end') {
    if (next.status !== 'completed') throw new TurnEnded(next);
    return { next: 'done' };
  }
  if (next?.next !== 'model') throw new UnreportedCalls(next);
  if (next.step === stop.step) return { next: 'resend' };
  return { next: 'continue', step: next.step, steers: next.steers, ...(next.cut?.step === stop.step ? { cut: next.cut } : {}) };
}

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
export async function failFor(turn: ExternalTurn, err: unknown): Promise<void> {
  if (err instanceof TurnEnded || turn.signal.aborted) return;
  const code = (err as { code?: unknown } | undefined)?.code;
  const message = (err instanceof Error ? err.message : String(err)).slice(0, 2_000) || 'the runner failed';
  // A fail that comes too late (the turn ended meanwhile) changes nothing: the turn's end stands.
  await turn.fail(typeof code === 'string' && /^[a-z0-9_]{1,64}$/.test(code) ? code : 'runner_error', message).catch(() => undefined);
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  // A refusal nobody waits for is still seen: the adapter rethrows it.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

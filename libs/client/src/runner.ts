import { SteerlineClientError } from './errors';
import type { LeaseAnswer, RunnerApprovalAnswer, RunnerEnd, RunnerLease, RunnerLiveMessage, RunnerNext, RunnerToolResult, ToolCall, ToolProgressReport, Usage } from './types';

/** The HTTP calls a runner makes; the client passes its own (auth, base URL, fetch). */
export type RunnerTransport = <T>(method: string, path: string, init: { body?: unknown; signal?: AbortSignal }) => Promise<T>;

/** One model answer, as the runner's framework gave it. */
export interface ModelAnswerReport {
  step: number;
  text: string;
  toolCalls: ToolCall[];
  usage?: Usage;
}

/** What the runner had of a step it stopped for an urgent steer (docs/runner-protocol.md, "Interrupts"). */
export interface InterruptedReport {
  step: number;
  /** What the model had written of an answer not reported yet. */
  partialText?: string;
  usage?: Usage;
  /** The step's calls that finished before the stop; every other unfinished call ends `interrupted`. */
  results?: RunnerToolResult[];
}

/** Why `interruptSignal` aborted: an urgent steer asks the runner to stop step `step`. */
export class StepInterrupted extends Error {
  readonly code = 'interrupted';
  constructor(readonly step: number) {
    super(`an urgent steer asks to stop step ${step}`);
    this.name = 'StepInterrupted';
  }
}

/** The decision on a call that asked for approval. */
export interface ApprovalOutcome {
  toolCallId: string;
  decision: 'approved' | 'denied';
  reason?: string;
  by: 'user' | 'timeout' | 'cancel';
}

/** Live output is batched: flushed this often, or when a report is sent. */
const LIVE_FLUSH_MS = 50;
/** Pause before a renewal is tried again after a transient failure. */
const RETRY_MS = 250;

/**
 * An external turn, run by this process (docs/runner-protocol.md): it holds the
 * turn's runner lease, renewed here in the background, and reports what its
 * loop did. Steerline answers every report with what comes next
 * (`RunnerNext`): the steers to add to the next model request, the calls to
 * run, or the end. `signal` aborts when the turn ends without this runner
 * ending it (a cancel from any client, a lost lease, an engine failing it).
 */
export class ExternalTurn {
  readonly signal: AbortSignal;
  /** Resolves when the turn is over, however it ended. */
  readonly ended: Promise<RunnerEnd>;
  private readonly abort = new AbortController();
  /** Stops the renewal loop's held request when this runner is done. */
  private readonly stopped = new AbortController();
  private resolveEnded!: (end: RunnerEnd) => void;
  private end?: RunnerEnd;
  private live: RunnerLiveMessage[] = [];
  private liveTimer?: ReturnType<typeof setTimeout>;
  private liveSending: Promise<void> = Promise.resolve();
  private lastRenewal = Date.now();
  /** The report in flight: an end the renewal hears of may be its doing. */
  private reporting: Promise<unknown> = Promise.resolve();
  /** The model request the runner works on (the latest `model` answer's step; step 1 at the start). */
  private step = 1;
  /** Aborted when an urgent steer asks to stop the step in flight; a fresh one once the stop is reported. */
  private interruption = new AbortController();
  /** The step of the last stop Steerline asked for, so the renewal's long poll waits for the next one. */
  private interruptSeen?: number;

  constructor(
    private readonly call: RunnerTransport,
    readonly turnId: string,
    private readonly lease: RunnerLease,
  ) {
    this.signal = this.abort.signal;
    this.ended = new Promise((r) => (this.resolveEnded = r));
    void this.renewLoop();
  }

  /**
   * Aborted (with a `StepInterrupted`) when an urgent steer asks this runner to stop the step in
   * flight: abort the model call or the tools, then `reportInterrupted`. A fresh signal follows the report.
   */
  get interruptSignal(): AbortSignal {
    return this.interruption.signal;
  }

  get leaseMs(): number {
    return this.lease.leaseMs;
  }

  /** The lease token: a process that takes the turn over (`client.attachExternalTurn`) needs it. */
  get leaseToken(): string {
    return this.lease.token;
  }

  /** After each model answer. A text-only answer is answered `model` (a continuation, with its steers) or `end`. */
  reportAnswer(answer: ModelAnswerReport): Promise<RunnerNext> {
    const { step, text, toolCalls, usage } = answer;
    return this.report('answer', { step, text, toolCalls, ...(usage ? { usage } : {}) });
  }

  /** Step `step`'s tool results (all, or some: the answer then lists what is left). */
  reportResults(step: number, results: RunnerToolResult[]): Promise<RunnerNext> {
    return this.report('results', { step, results });
  }

  /**
   * The step stopped for an urgent steer: what the model had written (an answer not reported), the
   * results of calls that finished. Answered `model` with the steers and the `cut` step as the next
   * request presents it (or what comes next, when the step had ended first).
   */
  async reportInterrupted(report: InterruptedReport): Promise<RunnerNext> {
    const { step, partialText, usage, results } = report;
    return this.report('interrupted', { step, ...(partialText !== undefined ? { partialText } : {}), ...(usage ? { usage } : {}), ...(results ? { results } : {}) });
  }

  /** Fails the turn with the runner's own code (lower-case token) and message. */
  fail(code: string, message: string): Promise<RunnerNext> {
    return this.report('fail', { code, message });
  }

  /**
   * Waits for the decision on a call whose `approval` was `pending`. Approved:
   * run it and report its result. Denied: Steerline recorded its `denied`
   * result already; do not report one. Rejects when the turn ends first.
   */
  async approval(toolCall: { id: string } | { toolCallId: string } | string, opts: { signal?: AbortSignal } = {}): Promise<ApprovalOutcome> {
    const toolCallId = typeof toolCall === 'string' ? toolCall : 'id' in toolCall ? toolCall.id : toolCall.toolCallId;
    const signal = anySignal([opts.signal, this.stopped.signal]);
    for (;;) {
      if (signal.aborted) throw new SteerlineClientError('turn_not_running', 'the turn ended before the call was decided', 409, { toolCallId });
      const answer = await this.call<RunnerApprovalAnswer>('POST', this.path(`approvals/${encodeURIComponent(toolCallId)}`), {
        body: { lease: this.lease.token, waitMs: this.waitMs() },
        signal,
      }).catch((err) => this.retryable(err, signal));
      if (answer && answer.decision !== 'pending') return answer as ApprovalOutcome;
    }
  }

  /** A text delta of model request `step`; sent in batches, in order. */
  publishDelta(step: number, text: string): void {
    if (text) this.queueLive({ type: 'ModelDelta', step, text });
  }

  /** Progress of a running call. */
  publishProgress(step: number, toolCallId: string, report: ToolProgressReport): void {
    this.queueLive({ type: 'ToolProgress', step, toolCallId, ...report });
  }

  /** Sends the live output queued so far. */
  flush(): Promise<void> {
    clearTimeout(this.liveTimer);
    this.liveTimer = undefined;
    const batch = this.live;
    this.live = [];
    if (batch.length > 0 && !this.end) {
      // Live output is best effort: a lost batch is not a failure of the turn.
      this.liveSending = this.liveSending.then(() => this.call('POST', this.path('live'), { body: { lease: this.lease.token, messages: batch } }).then(() => undefined, () => undefined));
    }
    return this.liveSending;
  }

  /** Stops renewing the lease: the turn then fails `runner_lost` once it lapses, unless it ended. */
  close(): void {
    this.stopped.abort();
    clearTimeout(this.liveTimer);
  }

  private async report(verb: 'answer' | 'results' | 'fail' | 'interrupted', body: Record<string, unknown>): Promise<RunnerNext> {
    await this.flush();
    try {
      const sent = this.send<RunnerNext>(verb, body);
      this.reporting = sent.catch(() => undefined);
      const next = await sent;
      this.lastRenewal = Date.now();
      // The stop is reported: the next step gets a signal of its own.
      if (verb === 'interrupted' && this.interruption.signal.aborted) this.interruption = new AbortController();
      // The runner's own report ended it (an answer, a failure, max_steps), unless another client cancelled first.
      if (next.next === 'end') this.finish(next, next.status === 'cancelled');
      if (next.next === 'model') {
        this.step = next.step;
        // The renewal may have heard of this step's stop before this answer came.
        if (this.interruptSeen === next.step) this.interrupt(next.step);
      }
      if (next.next === 'tools' && next.interrupt) this.interrupt(next.interrupt.step);
      return next;
    } catch (err) {
      if (lost(err)) this.finish({ next: 'end', status: 'failed', error: { code: (err as SteerlineClientError).code, message: (err as Error).message } }, true);
      throw err;
    }
  }

  /**
   * Sends a report. Two refusals mean nothing was decided, and the same report
   * is sent again, for up to a lease: the turn is moving to another engine (its
   * engine was lost or stopped: `unavailable` with `retryAfterSeconds`), or the
   * API key's rate limit (`rate_limited`, after its `retryAfterSeconds`).
   */
  private async send<T>(verb: string, body: Record<string, unknown>): Promise<T> {
    const since = Date.now();
    for (;;) {
      try {
        return await this.call<T>('POST', this.path(verb), { body: { lease: this.lease.token, ...body } });
      } catch (err) {
        const retryAfter = err instanceof SteerlineClientError && ['unavailable', 'rate_limited'].includes(err.code) ? err.details.retryAfterSeconds : undefined;
        if (typeof retryAfter !== 'number' || Date.now() - since >= this.lease.leaseMs || this.end) throw err;
        await sleep((err as SteerlineClientError).code === 'rate_limited' ? retryAfter * 1000 : RETRY_MS);
      }
    }
  }

  /**
   * Renews the lease with a long poll: each request is held by the engine up
   * to a third of the lease and answered at once when the turn ends, so a
   * cancel reaches `signal` within one round trip.
   */
  private async renewLoop(): Promise<void> {
    while (!this.end && !this.stopped.signal.aborted) {
      try {
        const seen = this.interruptSeen;
        const body = { lease: this.lease.token, waitMs: this.waitMs(), ...(seen !== undefined ? { interruptSeen: seen } : {}) };
        const answer = await this.call<LeaseAnswer>('POST', this.path('lease'), { body, signal: this.stopped.signal });
        this.lastRenewal = Date.now();
        if (answer.interrupt) this.interrupt(answer.interrupt.step);
        if (answer.turn.next === 'end') {
          // A report of this runner may be what ended it: its answer decides, when it comes.
          await this.reporting;
          this.finish(answer.turn, true);
        }
      } catch (err) {
        if (this.stopped.signal.aborted) return;
        if (lost(err)) {
          this.finish({ next: 'end', status: 'failed', error: { code: (err as SteerlineClientError).code, message: (err as Error).message } }, true);
          return;
        }
        // Not renewed for a whole lease: Steerline has failed the turn `runner_lost` by now.
        if (Date.now() - this.lastRenewal >= this.lease.leaseMs) {
          this.finish({ next: 'end', status: 'failed', error: { code: 'runner_lost', message: `the lease could not be renewed: ${(err as Error).message}` } }, true);
          return;
        }
        await sleep(RETRY_MS);
      }
    }
  }

  /** Steerline asks to stop step `step`: the step in flight is aborted (a later one, once it is in flight); an older one is gone already. */
  private interrupt(step: number): void {
    this.interruptSeen = step;
    if (step === this.step && !this.interruption.signal.aborted) this.interruption.abort(new StepInterrupted(step));
  }

  private finish(end: RunnerEnd, abort: boolean): void {
    if (this.end) return;
    this.end = end;
    this.stopped.abort();
    clearTimeout(this.liveTimer);
    if (abort) this.abort.abort(new SteerlineClientError(end.error?.code ?? (end.status === 'cancelled' ? 'turn_cancelled' : 'turn_not_running'), end.error?.message ?? end.reason ?? `the turn ${end.status}`, 409, { ...end }));
    this.resolveEnded(end);
  }

  private queueLive(message: RunnerLiveMessage): void {
    if (this.end) return;
    this.live.push(message);
    if (this.live.length >= 256) void this.flush();
    else this.liveTimer ??= setTimeout(() => void this.flush(), LIVE_FLUSH_MS);
  }

  private waitMs(): number {
    return Math.min(30_000, Math.max(0, Math.floor(this.lease.leaseMs / 3)));
  }

  private path(verb: string): string {
    return `/v1/turns/${encodeURIComponent(this.turnId)}/runner/${verb}`;
  }

  /** A transient failure is waited out (undefined: ask again); anything else is thrown. */
  private async retryable(err: unknown, signal: AbortSignal): Promise<undefined> {
    if (signal.aborted || !(err instanceof SteerlineClientError) || !(err.status === 0 || err.status >= 500)) throw err;
    await sleep(RETRY_MS);
    return undefined;
  }
}

/** The runner cannot go on: the turn is over or another runner holds it. */
function lost(err: unknown): boolean {
  return err instanceof SteerlineClientError && ['turn_not_running', 'not_lease_holder', 'not_found'].includes(err.code);
}

function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal {
  return AbortSignal.any(signals.filter((s): s is AbortSignal => s !== undefined));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref?.());
}

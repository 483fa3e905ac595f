import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  RUNNER_LOST,
  RUNNER_WAIT_MS_MAX,
  SteerlineError,
  boundOutput,
  isTerminalTurnEvent,
  renderInterrupted,
  renderSteer,
  truncateText,
  uuidv7,
  type AwaitApprovalCommand,
  type ChatMessage,
  type LeaseAnswer,
  type PublishLiveCommand,
  type RenewLeaseCommand,
  type ReportAnswerCommand,
  type ReportInterruptedCommand,
  type ReportResultsCommand,
  type RunnerApprovalAnswer,
  type RunnerFailCommand,
  type RunnerCut,
  type RunnerNext,
  type RunnerRecordedResult,
  type TurnEvent,
} from '@steerline/contracts';
import { ModelError, type ModelProvider } from '../models/model.provider';
import type { TurnCommand } from './turn.commands';
import { TurnRunner, rethrowAsUnavailable, type RunnerDeps } from './turn.runner';
import { hasRun, interruptPending, stepCalls, type TurnState } from './turn.state';

/** A fresh lease: the token goes to the runner once; the log and the engine keep only its digest. */
export function mintLease(): { token: string; digest: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, digest: leaseDigest(token) };
}

export function leaseDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** An external turn's model is the runner's: the engine never calls one. */
const RUNNERS_MODEL: ModelProvider = {
  complete: () => Promise.reject(new ModelError('model_failed', 'an external turn’s model is called by its runner')),
};

export type RemoteRunnerDeps = Omit<RunnerDeps, 'model'> & { lease: { digest: string; leaseMs: number } };

type Ended = Extract<RunnerNext, { next: 'end' }>;

/**
 * The shell of an external turn (docs/runner-protocol.md): the same decider
 * and the same log as `TurnRunner` (steers, approvals, cancel, hand-over are
 * its own code), but the model requests and tool calls it appends are run by
 * the process holding the lease, which reports them back here. Each report is
 * decided whole (all its commands or none), appended, and answered with what
 * the log now asks of the runner.
 */
export class RemoteTurnRunner extends TurnRunner {
  private leaseTimer?: NodeJS.Timeout;
  /** The end as the log recorded it, for the runner's `end` answers. */
  private outcome?: Ended;
  /** Long polls waiting for something to change (a decision, the end). */
  private readonly waiters = new Set<() => void>();
  private readonly deltaSinks = new Map<number, (text: string) => void>();
  private readonly lease: { digest: Buffer; leaseMs: number };
  /** The shell is done (the turn ended, or was handed to another engine): no long poll waits on it. */
  private closed = false;
  /** The steps an urgent steer cut, as their next request presents them (RunnerNext `cut`); the latest two steps only. */
  private readonly cuts = new Map<number, { text?: string; results: RunnerRecordedResult[] }>();

  constructor(deps: RemoteRunnerDeps, state: TurnState, history: readonly ChatMessage[]) {
    super({ ...deps, model: RUNNERS_MODEL }, state, history);
    this.lease = { digest: Buffer.from(deps.lease.digest, 'hex'), leaseMs: deps.lease.leaseMs };
    void this.ended.then(() => {
      clearTimeout(this.leaseTimer);
      this.closed = true;
      this.wake();
    });
  }

  /** The lease runs from the start, or afresh from a resume (the events `begin` acts on): a shell that never got the turn arms no timer. */
  begin(events: TurnEvent[]): void {
    super.begin(events);
    if (this.running) this.renew();
  }

  async reportAnswer(command: ReportAnswerCommand): Promise<RunnerNext> {
    this.hold(command.lease);
    const { step, text, toolCalls, usage } = command;
    const limit = this.deps.maxOutputBytes();
    // A fresh id for the follow-up turn, used only if this answer moves the turn's first next_turn steer.
    await this.run({ type: 'RecordModelAnswer', step, text: truncateText(text, limit), toolCalls, ...(usage && { usage }), nextTurnId: uuidv7() }).catch(rethrowAsUnavailable);
    return this.next();
  }

  /** A result for a call already finished (a denied call, a resent report) is skipped; the rest is decided together. */
  async reportResults(command: ReportResultsCommand): Promise<RunnerNext> {
    this.hold(command.lease);
    const commands = this.resultCommands(command.step, command.results);
    if (commands.length > 0) await this.run(commands).catch(rethrowAsUnavailable);
    return this.next();
  }

  /**
   * The step the runner stopped for an urgent steer (docs/runner-protocol.md, "Interrupts"): the
   * results it had, then the cut — decided together. A step the turn has left decides nothing;
   * the answer says what comes next either way.
   */
  async reportInterrupted(command: ReportInterruptedCommand): Promise<RunnerNext> {
    this.hold(command.lease);
    const { step, partialText, usage } = command;
    const commands = this.resultCommands(step, command.results ?? []);
    const text = partialText === undefined ? undefined : truncateText(partialText, this.deps.maxOutputBytes());
    commands.push({ type: 'RecordInterruption', step, ...(text !== undefined && { partialText: text }), ...(usage && { usage }) });
    await this.run(commands).catch(rethrowAsUnavailable);
    return this.next();
  }

  private resultCommands(step: number, results: ReportResultsCommand['results']): TurnCommand[] {
    const state = this.decided;
    const limit = this.deps.maxOutputBytes();
    const commands: TurnCommand[] = [];
    const command = { step };
    for (const r of results) {
      const call = hasRun(state) ? state.calls.get(r.toolCallId) : undefined;
      if (hasRun(state) && command.step === state.step && call?.step === state.step && call.progress === 'finished') continue;
      const name = call?.name ?? '';
      const error = r.error && { code: r.error.code, message: truncateText(r.error.message, limit) };
      commands.push({ type: 'RecordToolResult', step: command.step, toolCallId: r.toolCallId, name, ok: r.ok, durationMs: Math.round(r.durationMs ?? 0), ...(r.ok ? { output: boundOutput(r.output ?? null, limit) } : { error, fatal: r.fatal }) });
    }
    return commands;
  }

  async reportFailure(command: RunnerFailCommand): Promise<RunnerNext> {
    this.hold(command.lease);
    await this.run({ type: 'FailTurn', code: command.code, message: command.message }).catch(rethrowAsUnavailable);
    return this.next();
  }

  /**
   * Renews the lease, then holds the answer up to `waitMs` unless the turn ends meanwhile, or an
   * urgent steer asks the runner to stop a step it was not told of yet (`interruptSeen`).
   */
  async renewLease(command: RenewLeaseCommand): Promise<LeaseAnswer> {
    this.hold(command.lease);
    const news = () => {
      const step = this.cutAsked();
      return step !== undefined && step !== command.interruptSeen;
    };
    await this.waitFor(() => !this.running || news(), command.waitMs);
    if (!this.running) return { leaseMs: this.lease.leaseMs, turn: this.ended_() };
    const step = this.cutAsked();
    return { leaseMs: this.lease.leaseMs, turn: { next: 'running' }, ...(step !== undefined && { interrupt: { step } }) };
  }

  async awaitApproval(command: AwaitApprovalCommand): Promise<RunnerApprovalAnswer> {
    this.hold(command.lease);
    const { toolCallId } = command;
    const decision = () => {
      const state = this.state;
      return hasRun(state) ? state.calls.get(toolCallId)?.approval : undefined;
    };
    if (!decision()) throw new SteerlineError('not_found', `tool call ${toolCallId} of this turn did not ask for approval`, { toolCallId });
    await this.waitFor(() => decision()?.status !== 'pending' || !this.running, command.waitMs);
    const approval = decision()!;
    if (approval.status === 'pending') return { toolCallId, decision: 'pending' };
    return { toolCallId, decision: approval.status, ...(approval.reason !== undefined && { reason: approval.reason }), by: approval.by };
  }

  /** Live output: numbered per step by the engine's own publisher, as for its own turns. */
  publishLive(command: PublishLiveCommand): { published: number } {
    this.hold(command.lease);
    const live = this.deps.live;
    if (!live || !this.running) return { published: 0 };
    const state = this.decided;
    for (const m of command.messages) {
      if (m.type === 'ModelDelta') {
        // A cut (or answered) step's late text is not the record's: published only while its answer is awaited.
        if (state.status !== 'running' || m.step !== state.step || state.awaiting !== 'model') continue;
        let sink = this.deltaSinks.get(m.step);
        if (!sink) this.deltaSinks.set(m.step, (sink = live.deltas(m.step)));
        sink(m.text);
      } else live.progress(m.step, m.toolCallId)({ progress: m.progress, message: m.message });
    }
    return { published: command.messages.length };
  }

  /**
   * An urgent steer of an external turn: the runner's framework holds the step, so the runner
   * cuts it (docs/runner-protocol.md, "Interrupts"). Pending approvals are denied at once; every
   * running call, and an answer being written, wait for the runner's `interrupted` report.
   */
  protected cutFacts(): Pick<Extract<TurnCommand, { type: 'Interrupt' }>, 'partialText' | 'uninterruptible' | 'elapsedMs' | 'cutBy'> {
    const state = this.decided;
    return { cutBy: 'runner', uninterruptible: state.status === 'running' ? [...new Set(stepCalls(state).map((c) => c.name))] : [] };
  }

  /** The step an urgent steer asks the runner to stop now: an answer being written, or calls still running. */
  private cutAsked(): number | undefined {
    const state = this.decided;
    if (state.status !== 'running' || !interruptPending(state)) return undefined;
    if (state.awaiting === 'model' || (state.awaiting === 'tools' && stepCalls(state).some((c) => c.progress === 'started'))) return state.step;
    return undefined;
  }

  /** The engine neither calls the model nor runs the tools: the runner does, and reports. */
  protected requestModel(): void {}
  protected startTool(): void {}

  protected react(events: TurnEvent[], context: ChatMessage[]): void {
    for (const e of events) {
      this.keepCut(e);
      if (!isTerminalTurnEvent(e)) continue;
      if (e.type === 'TurnFailed') this.outcome = { next: 'end', status: 'failed', error: e.data.error };
      else if (e.type === 'TurnCancelled') this.outcome = { next: 'end', status: 'cancelled', reason: e.data.reason };
      else this.outcome = { next: 'end', status: 'completed' };
    }
    super.react(events, context);
    this.wake();
  }

  /** What a cut step leaves for the next request: the cut answer's message, the step's recorded results. */
  private keepCut(e: TurnEvent): void {
    if (e.type === 'ModelInterrupted') {
      this.cutOf(e.data.step).text = e.data.partialText.trim() ? renderInterrupted(e.data.partialText) : undefined;
    } else if (e.type === 'ToolCallFinished') {
      const { toolCallId, name, ok, output, error } = e.data;
      this.cutOf(e.data.step).results.push({ toolCallId, name, ok, ...(ok ? { output } : { error }) });
    } else if (e.type === 'ModelRequested') {
      for (const step of this.cuts.keys()) if (step < e.data.step - 1) this.cuts.delete(step);
    }
  }

  private cutOf(step: number): { text?: string; results: RunnerRecordedResult[] } {
    let cut = this.cuts.get(step);
    if (!cut) this.cuts.set(step, (cut = { results: [] }));
    return cut;
  }

  /** Only the lease's holder reports; each report renews it. Constant time: the token is a secret. */
  private hold(token: string): void {
    const given = Buffer.from(leaseDigest(token), 'hex');
    if (given.length !== this.lease.digest.length || !timingSafeEqual(given, this.lease.digest)) {
      throw new SteerlineError('not_lease_holder', `the runner lease of turn ${this.turnId} is not this one (another runner holds it, or it lapsed)`, { turnId: this.turnId });
    }
    if (!this.running) throw new SteerlineError('turn_not_running', `turn ${this.turnId} is not running`, { ...this.ended_() });
    this.renew();
  }

  /** A lapsed lease: the runner is gone, and with it the turn (its steers dropped `turn_failed`). */
  private renew(): void {
    clearTimeout(this.leaseTimer);
    this.leaseTimer = setTimeout(() => {
      void this.runIfRunning({ type: 'FailTurn', code: RUNNER_LOST, message: `the runner did not renew its lease within ${this.lease.leaseMs} ms` });
    }, this.lease.leaseMs);
    this.leaseTimer.unref();
  }

  /** What the log asks of the runner now. */
  private next(): RunnerNext {
    const state = this.state;
    if (state.status !== 'running') return this.ended_();
    if (state.awaiting === 'model') {
      const steers = [...state.steers.values()]
        .filter((s) => s.status === 'delivered' && s.requestStep === state.step)
        .sort((a, b) => a.position - b.position)
        .map((s) => ({ steerId: s.steerId, text: s.text, rendered: renderSteer(s.text), position: s.position }));
      const interrupted = [...state.steers.values()].some((s) => s.status === 'delivered' && s.requestStep === state.step && s.boundary === 'interrupt');
      const kept = interrupted ? this.cuts.get(state.step - 1) : undefined;
      const cut: RunnerCut | undefined = kept && { step: state.step - 1, ...(kept.text !== undefined && { text: kept.text }), results: kept.results };
      return { next: 'model', step: state.step, steers, ...(cut && { cut }) };
    }
    const calls = stepCalls(state).map((c) => ({ toolCallId: c.toolCallId, name: c.name, approval: c.approval?.status ?? ('none' as const), finished: c.progress === 'finished' }));
    const interrupt = this.cutAsked();
    return { next: 'tools', step: state.step, calls, ...(interrupt !== undefined && { interrupt: { step: interrupt } }) };
  }

  private ended_(): Ended {
    return this.outcome ?? { next: 'end', status: this.state.status === 'cancelled' ? 'cancelled' : this.state.status === 'completed' ? 'completed' : 'failed' };
  }

  private waitFor(done: () => boolean, waitMs = 0): Promise<void> {
    if (this.closed || done() || waitMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!this.closed && !done()) return;
        finish();
      };
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(finish, Math.min(waitMs, RUNNER_WAIT_MS_MAX));
      timer.unref();
      this.waiters.add(check);
    });
  }

  private wake(): void {
    for (const check of [...this.waiters]) check();
  }
}

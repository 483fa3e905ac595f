import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  RUNNER_LOST,
  RUNNER_WAIT_MS_MAX,
  SteerlineError,
  boundOutput,
  isTerminalTurnEvent,
  renderSteer,
  truncateText,
  uuidv7,
  type AwaitApprovalCommand,
  type ChatMessage,
  type LeaseAnswer,
  type PublishLiveCommand,
  type RenewLeaseCommand,
  type ReportAnswerCommand,
  type ReportResultsCommand,
  type RunnerApprovalAnswer,
  type RunnerFailCommand,
  type RunnerNext,
  type TurnEvent,
} from '@steerline/contracts';
import { ModelError, type ModelProvider } from '../models/model.provider';
import type { TurnCommand } from './turn.commands';
import { TurnRunner, rethrowAsUnavailable, type RunnerDeps } from './turn.runner';
import { hasRun, stepCalls, type TurnState } from './turn.state';

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
    const state = this.decided;
    const limit = this.deps.maxOutputBytes();
    const commands: TurnCommand[] = [];
    for (const r of command.results) {
      const call = hasRun(state) ? state.calls.get(r.toolCallId) : undefined;
      if (hasRun(state) && command.step === state.step && call?.step === state.step && call.progress === 'finished') continue;
      const name = call?.name ?? '';
      const error = r.error && { code: r.error.code, message: truncateText(r.error.message, limit) };
      commands.push({ type: 'RecordToolResult', step: command.step, toolCallId: r.toolCallId, name, ok: r.ok, durationMs: Math.round(r.durationMs ?? 0), ...(r.ok ? { output: boundOutput(r.output ?? null, limit) } : { error, fatal: r.fatal }) });
    }
    if (commands.length > 0) await this.run(commands).catch(rethrowAsUnavailable);
    return this.next();
  }

  async reportFailure(command: RunnerFailCommand): Promise<RunnerNext> {
    this.hold(command.lease);
    await this.run({ type: 'FailTurn', code: command.code, message: command.message }).catch(rethrowAsUnavailable);
    return this.next();
  }

  /** Renews the lease, then holds the answer up to `waitMs` unless the turn ends meanwhile. */
  async renewLease(command: RenewLeaseCommand): Promise<LeaseAnswer> {
    this.hold(command.lease);
    await this.waitFor(() => !this.running, command.waitMs);
    return { leaseMs: this.lease.leaseMs, turn: this.running ? { next: 'running' } : this.ended_() };
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
    for (const m of command.messages) {
      if (m.type === 'ModelDelta') {
        let sink = this.deltaSinks.get(m.step);
        if (!sink) this.deltaSinks.set(m.step, (sink = live.deltas(m.step)));
        sink(m.text);
      } else live.progress(m.step, m.toolCallId)({ progress: m.progress, message: m.message });
    }
    return { published: command.messages.length };
  }

  /**
   * An urgent steer of an external turn is queued as an ordinary one, for the
   * next boundary: the runner's framework holds the step, and the runner
   * protocol has no way yet to cut it and report what was cut.
   */
  submitSteer(steerId: string, text: string, opts: Parameters<TurnRunner['submitSteer']>[2] = {}): ReturnType<TurnRunner['submitSteer']> {
    const { urgency: _urgency, ...ordinary } = opts;
    return super.submitSteer(steerId, text, ordinary);
  }

  /** The engine neither calls the model nor runs the tools: the runner does, and reports. */
  protected requestModel(): void {}
  protected startTool(): void {}

  protected react(events: TurnEvent[], context: ChatMessage[]): void {
    for (const e of events) {
      if (!isTerminalTurnEvent(e)) continue;
      if (e.type === 'TurnFailed') this.outcome = { next: 'end', status: 'failed', error: e.data.error };
      else if (e.type === 'TurnCancelled') this.outcome = { next: 'end', status: 'cancelled', reason: e.data.reason };
      else this.outcome = { next: 'end', status: 'completed' };
    }
    super.react(events, context);
    this.wake();
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
      return { next: 'model', step: state.step, steers };
    }
    const calls = stepCalls(state).map((c) => ({ toolCallId: c.toolCallId, name: c.name, approval: c.approval?.status ?? ('none' as const), finished: c.progress === 'finished' }));
    return { next: 'tools', step: state.step, calls };
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

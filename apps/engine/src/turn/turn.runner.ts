import { Logger } from '@nestjs/common';
import {
  SteerlineError,
  boundOutput,
  isTerminalTurnEvent,
  truncateText,
  messagesOf,
  uuidv7,
  type ApprovalAnswer,
  type ApprovalDecision,
  type ChatMessage,
  type OnTurnEnd,
  type Receipt,
  type SteerUrgency,
  type TurnEvent,
} from '@steerline/contracts';
import { UnappendableEventError } from '../log/event-log';
import { asUnavailable } from './shell.errors';
import type { TurnLive } from '../live/live.publisher';
import { ModelError, type ModelProvider } from '../models/model.provider';
import { ToolError, type ToolRegistry } from '../tools/tool.registry';
import { execute } from './turn.decider';
import type { TurnCommand } from './turn.commands';
import { evolve } from './turn.evolve';
import { TurnDeadlines } from './turn.deadlines';
import { approvalAnswerOf, receiptOf, stepCalls, type TurnState } from './turn.state';
import { StepWork } from './step-work';
import { stampContext } from './stamp';

/** Where a turn's events go: the conversation's one writer, shared with the decisions about its other turns. */
export interface TurnLog {
  /**
   * Appends a batch of the turn's events. `turn`: the turn's state the batch was decided from
   * and the one it leads to; a log that keeps the turn's state too may keep that object instead
   * of evolving a copy of its own (it is the same value: evolve is pure).
   */
  append(events: TurnEvent[], turn?: { from: TurnState; to: TurnState }): Promise<void>;
}

export interface RunnerDeps {
  writer: TurnLog;
  model: ModelProvider;
  tools: ToolRegistry;
  /** Bound on one tool output or model answer (UTF-8 bytes): larger ones are cut before they are decided on. */
  maxOutputBytes: () => number;
  /** Live output of this turn (hook points: model deltas, tool progress); absent, nothing is published. */
  live?: TurnLive;
  onEnded: (runner: TurnRunner) => void;
}


/**
 * The shell around the turn's decider for a turn whose loop runs in this
 * engine: appends what it decides, in order, and only then acts on it — the
 * model is called after its `ModelRequested` (and the deliveries before it)
 * are in the log (write-ahead). Model answers and tool results come back as
 * commands. Its start or resume is decided by the conversation's decider and
 * appended by the registry; `begin` acts on it.
 */
export class TurnRunner {
  private readonly logger = new Logger('TurnRunner');
  /** What has been decided; leads the log. Commands are decided against it. */
  protected decided: TurnState;
  /** What the log has acknowledged; receipts are read from it, never from `decided`. */
  private logged: TurnState;
  private readonly messages: ChatMessage[];
  private tail: Promise<void> = Promise.resolve();
  private broken?: Error;
  /** Set when this engine stops: nothing more is decided here; another engine resumes the turn. */
  private handingOver = false;
  /** Bumped when the turn is failed because an event could not be appended: commands decided before that are void. */
  private epoch = 0;
  private finished = false;
  private readonly abort = new AbortController();
  /** The model stream and tool calls in flight, each abortable on its own by an interrupt. */
  private readonly work = new StepWork(this.abort.signal);
  /** Approval timeouts of calls still waiting, and deadlines of queued steers. */
  private readonly deadlines = new TurnDeadlines((command) => void this.runIfRunning(command));
  private endedResolve!: () => void;
  readonly ended = new Promise<void>((r) => (this.endedResolve = r));

  constructor(
    protected readonly deps: RunnerDeps,
    state: TurnState,
    history: readonly ChatMessage[],
  ) {
    this.decided = state;
    this.logged = state;
    this.messages = [...history];
  }

  get turnId(): string {
    return this.decided.turnId;
  }
  get conversationId(): string {
    return this.decided.conversationId;
  }
  get tenantId(): string {
    return this.decided.tenantId;
  }
  /** The model context so far: where a turn queued behind this one starts from. */
  get context(): ChatMessage[] {
    return this.messages.slice();
  }
  /** What the log holds of this turn (its follow-up, once it ended). */
  get state(): TurnState {
    return this.logged;
  }
  get running(): boolean {
    return this.decided.status === 'running';
  }

  /**
   * Decides a command (or several, all or none: one refused refuses them all),
   * queues its events for the log and resolves once they are acknowledged.
   */
  protected run(commands: TurnCommand | TurnCommand[]): Promise<TurnEvent[]> {
    if (this.broken) return Promise.reject(new SteerlineError('unavailable', 'this turn lost its event log'));
    if (this.handingOver) return Promise.reject(new SteerlineError('unavailable', 'this turn is moving to another engine; resubmit with the same steerId'));
    const from = this.decided;
    let state = from;
    const events: TurnEvent[] = [];
    for (const command of Array.isArray(commands) ? commands : [commands]) {
      const decided = execute(state, command, stampContext);
      state = decided.state;
      events.push(...decided.events);
    }
    this.decided = state;
    this.silenceCut(events);
    for (const e of events) this.messages.push(...messagesOf(e));
    const snapshot = this.messages.slice();
    const epoch = this.epoch;
    const appended = this.tail.then(async () => {
      if (events.length === 0) return;
      if (epoch !== this.epoch) throw new SteerlineError('turn_not_running', `turn ${this.turnId} failed before this was logged`);
      try {
        await this.deps.writer.append(events, { from, to: state });
      } catch (err) {
        if (err instanceof UnappendableEventError) await this.failUnappendable(err, events);
        throw err;
      }
      // Decided from what the log now holds: the state it decided is the log's (evolve is pure), not a second copy of it.
      this.logged = this.logged === from ? state : events.reduce(evolve, this.logged);
      this.react(events, snapshot);
    });
    // A typed refusal is the caller's answer; anything else means the log is gone for this turn.
    this.tail = appended.catch((err: Error) => (err instanceof SteerlineError ? undefined : this.fail(err)));
    return appended.then(() => events);
  }

  /**
   * An event the log refuses as it is (over max_payload even after outputs
   * were bounded): the turn fails honestly instead of hanging. What was
   * appended of the batch stands; the rest is void, and the turn's queued
   * steers are dropped `turn_failed` before its TurnFailed, decided from what
   * the log holds. Throws `payload_too_large` for the command that caused it.
   */
  private async failUnappendable(err: UnappendableEventError, events: TurnEvent[]): Promise<never> {
    // The writer already goes on from err.lastSeq, after what was appended of the batch.
    this.epoch++;
    this.logged = events.slice(0, err.appended).reduce(evolve, this.logged);
    this.decided = this.logged;
    const refused = new SteerlineError('payload_too_large', err.message, { event: err.event.type });
    this.logger.error({ message: 'turn failed: an event could not be appended', turnId: this.turnId, conversationId: this.conversationId, event: err.event.type, error: err.message });
    if (this.logged.status !== 'running') throw refused;
    const { state, events: failed } = execute(this.logged, { type: 'FailTurn', code: 'payload_too_large', message: `the turn's ${err.event.type} event is too large for the log` }, stampContext);
    this.decided = state;
    await this.deps.writer.append(failed);
    this.logged = failed.reduce(evolve, this.logged);
    this.react(failed, []);
    throw refused;
  }

  /**
   * Acts on the appended events that started or resumed the turn (the history
   * it was built with includes them): calls the model, runs the tools, arms
   * the deadlines.
   */
  begin(events: TurnEvent[]): void {
    this.react(events, this.messages.slice());
  }

  async submitSteer(steerId: string, text: string, opts: { onTurnEnd?: OnTurnEnd; ttlMs?: number; urgency?: SteerUrgency } = {}): Promise<Receipt> {
    const expiresAt = opts.ttlMs === undefined ? undefined : new Date(Date.now() + opts.ttlMs).toISOString();
    const steer = { steerId, text, ...(opts.onTurnEnd && { onTurnEnd: opts.onTurnEnd }), ...(expiresAt && { expiresAt }) };
    const command: TurnCommand = opts.urgency === 'interrupt' ? { type: 'Interrupt', ...steer, ...this.cutFacts() } : { type: 'SubmitSteer', ...steer };
    await this.run(command).catch(rethrowAsUnavailable);
    return inLog(receiptOf(this.logged, steerId), `steer ${steerId}`);
  }

  /**
   * What the decider needs to cut the step now (docs/design.md §2, "Urgency"):
   * what the streamed answer has written, which running calls' tools must be
   * waited for, how long each call has run. Read at the moment it is decided.
   */
  protected cutFacts(): Pick<Extract<TurnCommand, { type: 'Interrupt' }>, 'partialText' | 'uninterruptible' | 'elapsedMs' | 'cutBy'> {
    const state = this.decided;
    if (state.status !== 'running') return { uninterruptible: [] };
    const written = state.awaiting === 'model' ? this.work.written(state.step) : undefined;
    const names = new Set(stepCalls(state).map((c) => c.name));
    const uninterruptible = [...names].filter((name) => this.deps.tools.get(name, this.tenantId)?.interruptible === false);
    return { ...(written && { partialText: truncateText(written, this.deps.maxOutputBytes()) }), uninterruptible, elapsedMs: this.work.elapsed() };
  }

  /** A cut answer's later deltas are not the record's: none is published once the cut is decided. */
  private silenceCut(events: TurnEvent[]): void {
    for (const e of events) if (e.type === 'ModelInterrupted') this.work.silence(e.data.step);
  }

  /**
   * The cut is in the log: stop the stream and the calls it gave results to.
   * A runner whose step runs elsewhere (an external turn) aborts its adapter's signal here instead.
   */
  protected stopCut(e: TurnEvent): void {
    if (e.type === 'ModelInterrupted') this.work.abortModel(e.data.step);
    else if (e.type === 'ToolCallFinished') this.work.abortCall(e.data.toolCallId);
  }

  /** Replaces a queued steer's text; the decider refuses it once the steer is delivered or dropped. */
  async editSteer(steerId: string, text: string): Promise<Receipt> {
    await this.run({ type: 'EditSteer', steerId, text }).catch(rethrowAsUnavailable);
    return inLog(receiptOf(this.logged, steerId), `steer ${steerId}`);
  }

  async withdraw(steerId: string): Promise<Receipt> {
    await this.run({ type: 'WithdrawSteer', steerId }).catch(rethrowAsUnavailable);
    return inLog(receiptOf(this.logged, steerId), `steer ${steerId}`);
  }

  /** A person's decision on a waiting call; the same decision again answers the same (docs/design.md §9). */
  async decideApproval(toolCallId: string, decision: ApprovalDecision, reason?: string): Promise<ApprovalAnswer> {
    await this.run({ type: 'DecideApproval', toolCallId, decision, by: 'user', ...(reason !== undefined && { reason }) }).catch(rethrowAsUnavailable);
    return inLog(approvalAnswerOf(this.logged, toolCallId), `the decision on ${toolCallId}`);
  }

  async cancel(reason: string): Promise<void> {
    const done = this.run({ type: 'CancelTurn', reason });
    this.abort.abort(new Error('turn cancelled'));
    await done.catch(rethrowAsUnavailable);
  }

  /**
   * Stops running the turn here without settling it: in-flight model and tool
   * calls are aborted (their answers are not recorded), what was decided is
   * appended, and the turn stays claimed for another engine to resume.
   */
  async handOver(): Promise<void> {
    if (!this.running || this.finished) return;
    this.handingOver = true;
    this.abort.abort(new Error('engine stopping: the turn is handed over'));
    await this.tail;
    this.finish();
  }

  /** Settles the turn because this engine is going away. */
  async abandon(reason: 'engine_lost' | 'engine_shutdown'): Promise<void> {
    if (!this.running) return this.ended;
    const done = this.run({ type: 'AbandonTurn', reason });
    this.abort.abort(new Error(reason));
    await done.catch(() => undefined);
  }

  /** Acts on events the log acknowledged: what they ask the engine to do next. */
  protected react(events: TurnEvent[], context: ChatMessage[]): void {
    for (const e of events) {
      if (e.type === 'TurnResumed') {
        // The lost engine's timers went with it.
        this.deadlines.rearm(this.logged);
        this.pickUp(events, context);
      } else if (e.type === 'ModelRequested') this.requestModel(e.data.step, context);
      else if (e.type === 'ToolCallStarted') this.startTool(e.data.step, e.data.toolCallId, e.data.name, e.data.args);
      else if (isTerminalTurnEvent(e)) this.finish();
      else {
        this.stopCut(e);
        this.deadlines.onEvent(e, this.logged);
      }
    }
  }

  /**
   * Goes on where the lost engine stopped: sends the request it was waiting on
   * again (its delivered steers are in `context` already), and reruns the
   * idempotent calls it left unfinished. What the resume decided anew (a first
   * request, calls never started, a boundary) is reacted to like any event.
   */
  private pickUp(events: TurnEvent[], context: ChatMessage[]): void {
    const state = this.logged;
    if (state.status !== 'running' || events.some((e) => e.type === 'ModelRequested' || isTerminalTurnEvent(e))) return;
    if (state.awaiting === 'model') {
      this.requestModel(state.step, context);
      return;
    }
    const startedNow = new Set(events.flatMap((e) => (e.type === 'ToolCallStarted' ? [e.data.toolCallId] : [])));
    for (const call of stepCalls(state)) {
      if (call.progress === 'started' && !startedNow.has(call.toolCallId)) this.startTool(state.step, call.toolCallId, call.name, call.args);
    }
  }

  /** A model request is in the log: send it. An external turn's runner sends its own (turn.remote-runner.ts). */
  protected requestModel(step: number, context: ChatMessage[]): void {
    void this.callModel(step, context);
  }

  /** A call started in the log: run it. An external turn's runner runs its own. */
  protected startTool(step: number, toolCallId: string, name: string, args: Record<string, unknown>): void {
    void this.runTool(step, toolCallId, name, args);
  }

  private async callModel(step: number, messages: ChatMessage[]): Promise<void> {
    // An interrupt decided before this request was logged cut it: it is never sent.
    if (this.decided.status !== 'running' || !this.awaitsModel(step)) return;
    const { model, instructions, settings, tools } = this.decided.spec;
    const { signal, onDelta } = this.work.model(step, this.deps.live?.deltas(step));
    let command: TurnCommand;
    try {
      // What the turn recorded, so a resumed turn sends the same system prompt, settings and tools.
      const agent = { tools: this.deps.tools.specs(this.tenantId, tools), settings: settings ?? {}, ...(instructions !== undefined && { instructions }) };
      const answer = await this.deps.model.complete({ step, model, messages, ...agent, onDelta }, signal);
      // Cut meanwhile: the decider recorded what was written; the rest of the answer is not the turn's.
      if (!this.awaitsModel(step)) return;
      // Cut before it is decided on: the log and the next model request get the same bounded text.
      // A fresh id for the follow-up turn, used only if this answer moves the turn's first next_turn steer.
      command = { type: 'RecordModelAnswer', step, ...answer, text: truncateText(answer.text, this.deps.maxOutputBytes()), nextTurnId: uuidv7() };
    } catch (err) {
      if (signal.aborted) return;
      const code = err instanceof ModelError ? err.code : 'model_failed';
      command = { type: 'FailTurn', code, message: (err as Error).message };
    }
    await this.runIfRunning(command);
  }

  private async runTool(step: number, toolCallId: string, name: string, args: Record<string, unknown>): Promise<void> {
    const started = performance.now();
    // A tool outside the turn's allow-list is never run, whatever the model asked for: it was not offered.
    const tool = this.decided.status === 'running' ? this.deps.tools.get(name, this.tenantId, this.decided.spec.tools) : undefined;
    let result: Pick<Extract<TurnCommand, { type: 'RecordToolResult' }>, 'ok' | 'output' | 'error' | 'fatal'>;
    const signal = this.work.call(toolCallId);
    try {
      if (!tool) throw new ToolError('unknown_tool', `no tool named ${name} is offered to this turn`);
      const limit = this.deps.maxOutputBytes();
      const output = await tool.run(args, signal, { tenantId: this.tenantId, conversationId: this.conversationId, turnId: this.turnId, step, toolCallId, maxOutputBytes: limit, progress: this.deps.live?.progress(step, toolCallId) });
      // Write-ahead holds: what the log records is exactly what the model will be shown.
      result = { ok: true, output: boundOutput(output, limit) };
    } catch (err) {
      if (signal.aborted) return;
      // An error the tool did not type is a crash of the tool: the turn cannot trust what it did.
      const typed = err instanceof ToolError;
      const message = truncateText(String((err as Error)?.message ?? err), this.deps.maxOutputBytes());
      result = { ok: false, error: { code: typed ? err.code : 'tool_failed', message }, fatal: typed ? err.fatal : true };
    } finally {
      this.work.done(toolCallId);
    }
    // An interrupt gave the call its result already: this one is not the turn's.
    if (this.decided.status === 'running' && this.decided.calls.get(toolCallId)?.progress !== 'started') return;
    const durationMs = Math.round(performance.now() - started);
    await this.runIfRunning({ type: 'RecordToolResult', step, toolCallId, name, durationMs, ...result });
  }

  private awaitsModel(step: number): boolean {
    return this.decided.status === 'running' && this.decided.awaiting === 'model' && this.decided.step === step;
  }

  /** Model answers and tool results that arrive after the turn ended are dropped on purpose. */
  protected async runIfRunning(command: TurnCommand): Promise<void> {
    if (!this.running) return;
    await this.run(command).catch((err) => {
      // turn_not_running: it ended meanwhile; already_decided: a person decided first; payload_too_large: failUnappendable already said so.
      const quiet = ['turn_not_running', 'already_decided', 'payload_too_large'];
      if (!(err instanceof SteerlineError && quiet.includes(err.code))) this.logger.error({ message: 'turn command failed', turnId: this.turnId, error: (err as Error).message });
    });
  }

  private fail(err: Error): void {
    if (this.broken) return;
    this.broken = err;
    this.abort.abort(err);
    this.logger.error({ message: 'turn stopped: its events could not be appended', turnId: this.turnId, conversationId: this.conversationId, error: err.message });
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.deadlines.clear();
    this.abort.abort(new Error('turn ended'));
    this.deps.onEnded(this);
    this.endedResolve();
  }
}

/** What an accepted command left in the log: there once its events are, by the decider's rules. */
function inLog<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new SteerlineError('internal', `${what} is not in the log after it was accepted`);
  return value;
}

export function rethrowAsUnavailable(err: unknown): never {
  throw asUnavailable(err);
}

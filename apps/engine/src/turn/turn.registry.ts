import { Logger } from '@nestjs/common';
import type { Subscription } from '@nats-io/transport-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import {
  DEFAULT_LIMITS,
  DEFAULT_MODEL,
  SteerlineError,
  messagesOf,
  uuidv7,
  type ChatMessage,
  type ModelSpec,
  type StartTurnAnswer,
  type StartTurnCommand,
  type Subjects,
  type TurnEvent,
} from '@steerline/contracts';
import { lastMessage, readConversation, type StoredEvent } from '@steerline/runtime';
import { StaleWriterError, type EventLog } from '../log/event-log';
import type { ModelRegistry } from '../models/model.registry';
import type { ToolRegistry } from '../tools/tool.registry';
import type { LivePublisher } from '../live/live.publisher';
import type { OwnedTurn, TurnOwnership } from '../ownership/turn-ownership';
import { evolve } from './turn.evolve';
import { busyTurn, queuedTurns, runningTurn } from './turn.history';
import { hasRun, initialState, type TurnSpec, type TurnState } from './turn.state';
import { ConversationLines, queuedSpec, type ConversationLine, type LinesDeps } from './conversation.lines';
import { followUpOf } from './turn.steers';
import { TurnRunner } from './turn.runner';

export interface RegistryDeps {
  jsm: JetStreamManager;
  subjects: Subjects;
  log: EventLog;
  models: ModelRegistry;
  tools: ToolRegistry;
  engineId: string;
  ownership: TurnOwnership;
  /** How many times one turn may move to another engine before it fails `engine_lost`. */
  resumeLimit: number;
  /** Subscribes the owner to a running turn's own subjects; returns the subscriptions to close at its end. */
  subscribeTurn: (runner: TurnRunner) => Subscription[];
  subscribeQueued: LinesDeps['subscribeQueued'];
  /** Bound on one tool output or model answer, in UTF-8 bytes. */
  maxOutputBytes: () => number;
  /** Publishes live output (docs/design.md §11); absent, turns run without it. */
  live?: LivePublisher;
}

/**
 * What became of an orphaned turn this engine tried to adopt. `advanced`: the
 * turn had ended but its engine died before the next queued turn started; that
 * turn started here.
 */
export type Adoption = 'resumed' | 'failed' | 'ended' | 'advanced' | 'claim_stale' | 'taken';

/** The turns this engine owns, by turn and by conversation, and the turns queued behind them. */
export class TurnRegistry {
  private readonly logger = new Logger('TurnRegistry');
  private readonly byTurn = new Map<string, TurnRunner>();
  private readonly byConversation = new Map<string, TurnRunner>();
  private readonly lines: ConversationLines;
  private readonly starting = new Set<string>();
  private readonly subscriptions = new Map<string, Subscription[]>();
  /** Set by a graceful shutdown: no queued turn starts here any more. */
  private stopping = false;
  /** Turns ending now whose follow-up and next queued turn are still being appended. */
  private readonly advancing = new Set<Promise<void>>();
  /** Their ids: an ended turn keeps its claim until the turn after it has started (see `release`). */
  private readonly advancingTurns = new Set<string>();

  constructor(private readonly deps: RegistryDeps) {
    this.lines = new ConversationLines({ log: deps.log, subscribeQueued: deps.subscribeQueued, running: (conversationId) => this.byConversation.has(conversationId) });
  }

  get size(): number {
    return this.byTurn.size;
  }

  turn(turnId: string): TurnRunner | undefined {
    return this.byTurn.get(turnId);
  }

  runningIn(conversationId: string): TurnRunner | undefined {
    return this.byConversation.get(conversationId);
  }

  /** Whether this engine still acts on the turn: runs it, or is starting the turn queued after it. */
  holds(turnId: string): boolean {
    return this.byTurn.has(turnId) || this.advancingTurns.has(turnId);
  }

  /**
   * Starts a turn: reads the conversation's log (its context, and whether a turn
   * runs), then appends TurnStarted guarded by the conversation's last sequence,
   * so two engines racing to start turns of one conversation cannot both win.
   * With `whenBusy: "queue"`, a conversation this engine runs a turn of gets the
   * turn queued instead (docs/design.md §8).
   */
  async start(command: StartTurnCommand): Promise<StartTurnAnswer> {
    const { tenantId, conversationId } = command;
    const model = command.model ?? DEFAULT_MODEL;
    if (!this.deps.models.has(model.provider)) {
      throw new SteerlineError('invalid_request', `model provider ${model.provider} is not configured on this server`);
    }
    // Only the owning tenant may learn that a turn runs: another tenant's conversation id is not found.
    const local = this.byConversation.get(conversationId);
    const line = this.lines.get(conversationId);
    if ((local ?? line) && (local ?? line)!.tenantId !== tenantId) throw new SteerlineError('not_found', `conversation ${conversationId} does not exist`);
    if (line && command.whenBusy === 'queue') return this.lines.enqueue(line, command);
    if (local || line || this.starting.has(conversationId)) {
      throw new SteerlineError('turn_already_running', 'a turn of this conversation is running');
    }
    this.starting.add(conversationId);
    try {
      const subject = this.deps.subjects.conversationEvents(tenantId, conversationId);
      const { events: stored, lastSeq } = await this.history(subject);
      if (lastSeq === 0) throw new SteerlineError('not_found', `conversation ${conversationId} does not exist`);
      const busy = busyTurn(stored.map((s) => s.event).filter((e): e is TurnEvent => e.turnId !== null));
      if (busy) throw new SteerlineError('turn_already_running', `turn ${busy} of this conversation is running or queued`, { turnId: busy });
      const turnId = command.turnId ?? uuidv7();
      const fresh = this.lines.open(conversationId, tenantId, subject, lastSeq);
      const state = { ...initialState(), turnId, tenantId, conversationId };
      const limits = { ...DEFAULT_LIMITS, ...command.limits };
      await this.launch(fresh, state, stored.flatMap((s) => messagesOf(s.event)), { prompt: command.prompt, model, limits, approvals: command.approvals }).catch((err: unknown) => {
        this.lines.close(conversationId);
        throw err;
      });
      return { turnId, status: 'running' };
    } finally {
      this.starting.delete(conversationId);
    }
  }

  /**
   * Runs a turn: claims it, subscribes its subjects and appends TurnStarted
   * through the conversation's writer. When that fails, the claim is kept
   * unless the log surely refused the start (another writer came first): the
   * reaper then finds the turn, running or still queued, and settles it from
   * the log.
   */
  private async launch(line: ConversationLine, state: TurnState, history: readonly ChatMessage[], spec: TurnSpec): Promise<TurnRunner> {
    const { turnId, tenantId, conversationId } = state;
    const runner = this.runner(line, spec.model.provider, state, history);
    this.track(runner);
    let claimed = false;
    try {
      // Claimed before TurnStarted exists, so a crash right after it still leaves a turn another engine settles.
      await this.deps.ownership.claim({ turnId, tenantId, conversationId });
      claimed = true;
      await runner.start({
        type: 'StartTurn',
        turnId,
        tenantId,
        conversationId,
        prompt: spec.prompt,
        model: spec.model,
        limits: spec.limits,
        engineId: this.deps.engineId,
        ...(spec.approvals && { approvals: spec.approvals }),
      });
    } catch (err) {
      this.forget(runner);
      if (claimed && takenOver(err)) await this.deps.ownership.release(turnId).catch(() => undefined);
      throw err;
    }
    this.logger.log({ message: 'turn started', turnId, conversationId, tenantId });
    return runner;
  }

  /**
   * Takes over a running turn whose engine is gone (docs/design.md §10):
   * rebuilds its state from the log, claims it, and appends TurnResumed guarded
   * by the conversation's last sequence — so of two engines adopting at once
   * only one goes on, and a frozen former owner is fenced. The claim is only
   * acted on when the log still names its engine as the owner; otherwise the
   * turn already moved on and the claim is stale. The turns queued behind it
   * (TurnQueued, not started) come along: this engine becomes the
   * conversation's one writer and starts them in order as each turn ends.
   */
  async adopt(orphan: OwnedTurn): Promise<Adoption> {
    const { turnId, tenantId, conversationId } = orphan;
    if (this.byTurn.has(turnId)) return 'taken';
    const subject = this.deps.subjects.conversationEvents(tenantId, conversationId);
    const { events: stored, lastSeq } = await readConversation(this.deps.jsm, this.deps.subjects.stream, subject);
    const turnEvents = stored.map((x) => x.event).filter((e): e is TurnEvent => e.turnId !== null);
    const state = turnEvents.filter((e) => e.turnId === turnId).reduce(evolve, { ...initialState(), turnId, tenantId, conversationId });
    if (state.status !== 'running') return this.advanceOrphaned(state, { subject, stored, turnEvents, lastSeq });
    if (state.engineId !== orphan.engineId) return 'claim_stale';
    // The log is the truth: a line this engine kept (its turn stopped by a lost log) is rebuilt from it.
    this.lines.close(conversationId);
    const line = this.lines.open(conversationId, tenantId, subject, lastSeq);
    const provider = state.spec.model.provider;
    const runner = this.runner(line, this.deps.models.has(provider) ? provider : DEFAULT_MODEL.provider, state, stored.flatMap((s) => messagesOf(s.event)));
    this.track(runner);
    try {
      await this.deps.ownership.claim({ turnId, tenantId, conversationId });
      // Queued before the resume is appended: a turn that ends at once (the resume limit) lets the first of them start.
      for (const queued of queuedTurns(turnEvents)) this.lines.requeue(line, queued);
      await runner.resume({ type: 'ResumeTurn', engineId: this.deps.engineId, limit: this.deps.resumeLimit, rerunnable: this.deps.tools.idempotentNames(tenantId), nextTurnId: uuidv7() });
    } catch (err) {
      this.forget(runner);
      if (this.lines.get(conversationId) === line) this.lines.close(conversationId);
      if (orphan.engineId !== this.deps.engineId) await this.deps.ownership.release(turnId).catch(() => undefined);
      if (err instanceof StaleWriterError) return 'taken';
      throw err;
    }
    if (!runner.running) return 'failed';
    this.logger.log({ message: 'turn resumed', turnId, conversationId, tenantId, previousEngineId: orphan.engineId, queuedTurns: line.queued.length });
    return 'resumed';
  }

  /**
   * An orphaned claim on a turn that is not running: its engine died after the
   * turn ended (or before a queued turn's start was appended), so the turns
   * queued behind it may have no one to start them. When no turn of the
   * conversation runs, this engine becomes its writer, queues the ended turn's
   * follow-up if the log lacks it, and starts the oldest queued turn — the
   * start guarded by the subject's last sequence, so a live owner racing it
   * wins or loses whole.
   */
  private async advanceOrphaned(
    state: TurnState,
    log: { subject: string; stored: StoredEvent[]; turnEvents: TurnEvent[]; lastSeq: number },
  ): Promise<Adoption> {
    const { tenantId, conversationId } = state;
    if (this.lines.get(conversationId) || runningTurn(log.turnEvents)) return 'ended';
    const followUp = hasRun(state) ? followUpOf(state) : undefined;
    const missingFollowUp = hasRun(state) && followUp && !log.turnEvents.some((e) => e.turnId === followUp.turnId) ? followUp : undefined;
    const queued = queuedTurns(log.turnEvents);
    if (queued.length === 0 && !missingFollowUp) return 'ended';
    const line = this.lines.open(conversationId, tenantId, log.subject, log.lastSeq);
    try {
      for (const q of queued) this.lines.requeue(line, q);
      if (missingFollowUp && hasRun(state)) await this.lines.queueFollowUp(line, state, missingFollowUp);
      const next = this.lines.next(line)!;
      await this.launch(line, next, log.stored.flatMap((s) => messagesOf(s.event)), queuedSpec(next));
    } catch (err) {
      this.lines.close(conversationId);
      if (takenOver(err)) return 'taken';
      throw err;
    }
    this.logger.log({ message: 'queued turn started after its owner was lost', endedTurnId: state.turnId, conversationId, tenantId, queuedTurns: line.queued.length });
    return 'advanced';
  }

  private runner(line: ConversationLine, provider: ModelSpec['provider'], state: TurnState, history: readonly ChatMessage[]): TurnRunner {
    return new TurnRunner(
      { writer: line.writer, model: this.deps.models.get(provider), tools: this.deps.tools, maxOutputBytes: this.deps.maxOutputBytes, live: this.deps.live?.forTurn(state.tenantId, state.conversationId, state.turnId), onEnded: (r) => this.release(r) },
      state,
      history,
    );
  }

  private track(runner: TurnRunner): void {
    this.byTurn.set(runner.turnId, runner);
    this.byConversation.set(runner.conversationId, runner);
    this.subscriptions.set(runner.turnId, this.deps.subscribeTurn(runner));
  }

  /**
   * After a turn ended: its `next_turn` steers become a queued follow-up turn,
   * then the oldest queued turn starts (a cancelled or failed turn lets it start too).
   */
  private async advance(ended: TurnRunner): Promise<boolean> {
    const line = this.lines.get(ended.conversationId);
    // A turn stopped by a lost log, or handed over, still owns the subject on paper: nothing can be appended after it.
    if (!line || ended.running) return true;
    const { state } = ended;
    const followUp = followUpOf(state);
    try {
      // Over the cap if need be: the moved steers' texts must not be lost.
      if (followUp && hasRun(state)) await this.lines.queueFollowUp(line, state, followUp);
      const next = this.lines.next(line);
      if (!next) {
        this.lines.dropIfIdle(state.conversationId);
        return true;
      }
      const runner = await this.launch(line, next, ended.context, queuedSpec(next));
      // Started (and claimed) while this engine stops: handed over like the others, so the queue behind it is adopted with it.
      if (this.stopping) await runner.handOver();
      return true;
    } catch (err) {
      // This engine no longer writes the conversation; the log keeps the queue, and the ended turn's claim
      // (kept unless another writer surely took over) has the reaper start it from there.
      this.lines.close(state.conversationId);
      this.logger.error({ message: 'the turn queued next could not start', turnId: state.turnId, error: (err as Error).message });
      return takenOver(err);
    }
  }

  /**
   * The conversation's events so far and its subject's last sequence (counting
   * messages that do not decode: the next append must name the true last one).
   * A conversation's first turn (its last event is ConversationCreated) needs one get.
   */
  private async history(subject: string): Promise<{ events: StoredEvent[]; lastSeq: number }> {
    const { jsm, subjects } = this.deps;
    const last = await lastMessage(jsm, subjects.stream, subject);
    if (!last) return { events: [], lastSeq: 0 };
    if (last.event?.type === 'ConversationCreated') return { events: [{ streamSeq: last.seq, subject, event: last.event }], lastSeq: last.seq };
    return readConversation(jsm, subjects.stream, subject);
  }

  /**
   * Graceful shutdown: every running turn stops here unsettled and keeps its
   * claim, so another engine (or this one, restarted) resumes it. The turns
   * queued behind them stay queued in the log and go with them: the adopter
   * rebuilds the conversation's queue from the log.
   */
  async handOverAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.byTurn.values()].map((r) => r.handOver()));
    while (this.advancing.size > 0) await Promise.all([...this.advancing]);
    this.lines.closeAll();
  }

  private forget(runner: TurnRunner): void {
    for (const sub of this.subscriptions.get(runner.turnId) ?? []) sub.unsubscribe();
    this.subscriptions.delete(runner.turnId);
    if (this.byTurn.get(runner.turnId) === runner) this.byTurn.delete(runner.turnId);
    if (this.byConversation.get(runner.conversationId) === runner) this.byConversation.delete(runner.conversationId);
  }

  /**
   * A turn left this engine. An ended turn keeps its claim until the turn
   * queued after it has started (and holds its own claim): an engine killed in
   * between leaves a claim the reaper finds, and the queue is started from the
   * log (`advanceOrphaned`). A turn stopped by a lost log keeps its claim: the
   * reaper settles it once the log is back.
   */
  private release(runner: TurnRunner): void {
    this.forget(runner);
    const { turnId } = runner;
    const ended = !runner.running;
    this.advancingTurns.add(turnId);
    const advancing: Promise<void> = this.advance(runner)
      .then((settled) => {
        if (ended && settled) return this.deps.ownership.release(turnId);
      })
      .catch((err: Error) => this.logger.warn({ message: 'could not release turn', turnId, error: err.message }))
      .finally(() => {
        this.advancing.delete(advancing);
        this.advancingTurns.delete(turnId);
      });
    this.advancing.add(advancing);
  }
}

/** The log refused an append because another writer came first: this engine no longer writes the conversation. */
function takenOver(err: unknown): boolean {
  return err instanceof StaleWriterError || (err as Error | undefined)?.cause instanceof StaleWriterError || (err instanceof SteerlineError && err.code === 'turn_already_running');
}

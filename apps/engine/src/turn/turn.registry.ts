import { Logger } from '@nestjs/common';
import type { Subscription } from '@nats-io/transport-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import {
  DEFAULT_LIMITS,
  SteerlineError,
  agentFieldsOfStart,
  isTerminalTurnEvent,
  recordedFieldsOf,
  messagesOf,
  uuidv7,
  type ChatMessage,
  type ModelSpec,
  type StartTurnAnswer,
  type Subjects,
  type TurnEvent,
} from '@steerline/contracts';
import type { StartTurnWithModel } from '../commands/start-model';
import { StaleWriterError, type EventLog } from '../log/event-log';
import { accepted, asUnavailable, refusalError, takenOver } from './shell.errors';
import type { OwnedTurn, TurnOwnership } from '../ownership/turn-ownership';
import { HeldClaims } from '../ownership/held-claims';
import type { ConversationCommand } from '../conversation/conversation.commands';
import type { ConversationState } from '../conversation/conversation.state';
import { ConversationLine, type Decided } from './conversation.lines';
import type { TurnRunner } from './turn.runner';
import { TurnShells, type ShellDeps } from './turn.shells';
import { mintLease } from './turn.remote-runner';

export interface RegistryDeps extends ShellDeps {
  jsm: JetStreamManager;
  subjects: Subjects;
  log: EventLog;
  engineId: string;
  ownership: TurnOwnership;
  /** How many times one turn may move to another engine before it fails `engine_lost`. */
  resumeLimit: number;
  /** Subscribes the owner to a queued turn's subjects: only its cancel is answered. */
  subscribeQueued: (turn: { turnId: string; tenantId: string }, cancel: (reason: string) => Promise<void>) => Subscription;
}

/**
 * What became of an orphaned turn this engine tried to adopt. `advanced`: the
 * turn had ended but its engine died before the next queued turn started; that
 * turn started here.
 */
export type Adoption = 'resumed' | 'failed' | 'ended' | 'advanced' | 'claim_stale' | 'taken';

/**
 * The conversations this engine writes and the turns it runs, in the shape of
 * a command handler: every command about a conversation — a start, the next
 * turn after one ends, a queued turn's cancel, an adoption — takes one path
 * (`handle`): the conversation's state as the log holds it, the conversation
 * decider's decision, the append fenced by the subject's last sequence, then
 * the reaction (a runner for a turn that started or resumed, the queued turns'
 * subjects, the claims let go of).
 */
export class TurnRegistry {
  private readonly logger = new Logger('TurnRegistry');
  private readonly runners: TurnShells;
  private readonly lines = new Map<string, ConversationLine>();
  private readonly claims: HeldClaims;
  /** Set by a graceful shutdown: no queued turn starts here any more; the adopter starts it from the log. */
  private stopping = false;
  /** Reactions to a turn's end still being decided and appended (a graceful shutdown waits for them). */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: RegistryDeps) {
    this.runners = new TurnShells(deps);
    this.claims = new HeldClaims(deps.ownership, (turnId, err) => this.logger.warn({ message: 'could not release turn', turnId, error: err.message }));
  }

  get size(): number {
    return this.runners.size;
  }

  turn(turnId: string): TurnRunner | undefined {
    return this.runners.get(turnId);
  }

  runningIn(conversationId: string): TurnRunner | undefined {
    const state = this.lines.get(conversationId)?.state;
    return state?.phase === 'running' ? this.runners.get(state.running) : undefined;
  }

  /** Whether this engine still acts on the turn: runs it, or is starting the turn queued after it. */
  holds(turnId: string): boolean {
    return this.claims.has(turnId);
  }

  /**
   * Starts a turn, or with `whenBusy: "queue"` queues it behind the running
   * one (docs/design.md §8). Only the conversation's writer — the engine
   * that runs its turn — queues: any other engine is refused
   * `turn_already_running` and forwards the start to the owner.
   */
  async start(command: StartTurnWithModel): Promise<StartTurnAnswer> {
    const { tenantId, conversationId, model } = command;
    // External turns (docs/runner-protocol.md): the runner calls its own model; a queued one would have nobody holding its lease.
    const external = command.runner === 'external' ? mintLease() : undefined;
    if (external && command.whenBusy === 'queue') throw new SteerlineError('invalid_request', 'an external turn cannot be queued (whenBusy "queue"): start it when the running turn has ended');
    // Refused before anything is appended: an unknown provider or endpoint (an external turn's model is its runner's own).
    if (!external) this.deps.models.check(model, tenantId);
    const turnId = command.turnId ?? uuidv7();
    let decided: Decided;
    // Once more if the line this engine wrote the conversation through was let go of meanwhile.
    for (let attempt = 1; ; attempt++) {
      decided = await this.decideStart(command, turnId, model, external?.digest);
      if (decided.ok || decided.refusal.code !== 'unavailable' || attempt >= 2) break;
    }
    const events = accepted(decided);
    const queued = events.find((e) => e.type === 'TurnQueued');
    if (queued?.type === 'TurnQueued') return { turnId, status: 'queued', position: queued.data.position };
    this.logger.log({ message: 'turn started', turnId, conversationId, tenantId });
    return { turnId, status: 'running', ...(external && { lease: { token: external.token, leaseMs: this.deps.runnerLeaseMs } }) };
  }

  private async decideStart(command: StartTurnWithModel, turnId: string, model: ModelSpec, leaseDigest?: string): Promise<Decided> {
    const { tenantId, conversationId } = command;
    const owned = this.lines.get(conversationId);
    const line = owned ?? (await this.load(tenantId, conversationId));
    if (!line) throw new SteerlineError('not_found', `conversation ${conversationId} does not exist`);
    return this.handle(line, {
      type: 'StartTurn',
      turnId,
      tenantId,
      engineId: this.deps.engineId,
      whenBusy: owned ? (command.whenBusy ?? 'reject') : 'reject',
      prompt: command.prompt,
      model,
      limits: { ...DEFAULT_LIMITS, ...command.limits },
      ...(command.approvals && { approvals: command.approvals }),
      // The agent's fields as resolved (an agent must name its version here), and an external turn's lease.
      ...recordedFieldsOf(agentFieldsOfStart(command)),
      ...(leaseDigest && { runner: 'external' as const, leaseDigest }),
    }).catch((err: unknown) => {
      // Someone appended to the conversation since it was read: another writer won the race.
      if (err instanceof StaleWriterError) throw new SteerlineError('turn_already_running', 'another turn of this conversation started first');
      throw asUnavailable(err);
    });
  }

  /**
   * Takes over the conversation of a claim whose engine is gone (docs/design.md
   * §10), decided from its log: a running turn the log still names the
   * claim's engine as the owner of is resumed; a turn that had ended lets the
   * turn after it start, when it never did. Appended guarded by the
   * subject's last sequence: of two engines adopting at once only one goes
   * on, and a frozen former owner is fenced.
   */
  async adopt(orphan: OwnedTurn): Promise<Adoption> {
    const { turnId, tenantId, conversationId } = orphan;
    if (this.runners.get(turnId) !== undefined || this.claims.has(turnId)) return 'taken';
    const line = this.lines.get(conversationId) ?? (await this.load(tenantId, conversationId));
    if (!line) return 'ended';
    const command: ConversationCommand = {
      type: 'AdoptConversation',
      orphan: { turnId, engineId: orphan.engineId },
      engineId: this.deps.engineId,
      limit: this.deps.resumeLimit,
      rerunnable: this.deps.tools.idempotentNames(tenantId),
      nextTurnId: uuidv7(),
    };
    let decided: Decided;
    try {
      // Another engine's claim still covers a turn whose resume failed here: this engine's own claim goes.
      decided = await this.handle(line, command, (claimed) => claimed === turnId && orphan.engineId !== this.deps.engineId);
    } catch (err) {
      if (takenOver(err)) return 'taken';
      throw err;
    }
    if (!decided.ok) {
      if (decided.refusal.code === 'claim_stale') return 'claim_stale';
      throw refusalError(decided.refusal);
    }
    const { events } = decided;
    const queuedTurns = decided.state.phase === 'none' ? 0 : decided.state.queue.length;
    // Resumed, or failed at the resume limit (its steers dropped first) when it no longer runs.
    if (events.some((e) => e.turnId === turnId && e.type !== 'TurnStarted' && e.type !== 'ModelRequested')) {
      const resumed = this.runners.get(turnId) !== undefined;
      this.logger.log({ message: resumed ? 'turn resumed' : 'turn failed at its resume limit', turnId, conversationId, tenantId, previousEngineId: orphan.engineId, queuedTurns });
      return resumed ? 'resumed' : 'failed';
    }
    if (events.some((e) => e.type === 'TurnStarted')) {
      this.logger.log({ message: 'queued turn started after its owner was lost', endedTurnId: turnId, conversationId, tenantId, queuedTurns });
      return 'advanced';
    }
    return 'ended';
  }

  /**
   * The one path of every conversation command: decide on the state the log
   * holds, claim what starts or resumes, append fenced by the subject's last
   * sequence, react. When the append fails, a claim taken for it is kept
   * unless the log surely refused it (another writer came first) or
   * `releaseOnError` says another claim covers the turn: the reaper then finds
   * the turn, running or still queued, and settles it from the log.
   */
  private async handle(line: ConversationLine, command: ConversationCommand, releaseOnError: (turnId: string) => boolean = () => false): Promise<Decided> {
    const claimed: string[] = [];
    let decided: Decided;
    try {
      decided = await line.decide(command, async (events) => {
        for (const e of events) {
          if (e.type !== 'TurnStarted' && e.type !== 'TurnResumed') continue;
          // Claimed before the event exists, so a crash right after it still leaves a turn another engine settles.
          await this.claims.claim({ turnId: e.turnId, tenantId: e.tenantId, conversationId: e.conversationId });
          claimed.push(e.turnId);
        }
      });
    } catch (err) {
      for (const turnId of claimed) {
        if (takenOver(err) || releaseOnError(turnId)) await this.claims.release(turnId);
        else this.claims.drop(turnId);
      }
      // This engine no longer knows where the subject stands: the next command reads it again.
      if (!this.runningHere(line)) this.close(line);
      throw err;
    }
    if (decided.ok) this.react(line, decided.events, decided.state);
    return decided;
  }

  /**
   * After a decision is in the log: the turn it started or resumed gets its
   * runner, the queued turns their subjects, the ended turns their claims let
   * go of once nothing waits for them, and an idle conversation is let go of.
   */
  private react(line: ConversationLine, events: TurnEvent[], state: ConversationState): void {
    const conversationId = line.conversationId;
    if (!conversationId || line.closed) return;
    if (this.lines.get(conversationId) !== line) {
      // A line read for this command becomes the conversation's once it appended; otherwise it is let go of.
      if (events.length === 0 || this.lines.has(conversationId)) return line.close();
      this.lines.set(conversationId, line);
    }
    for (const e of events) if (isTerminalTurnEvent(e)) this.claims.ended(e.turnId);
    const running = state.phase === 'running' ? state.turns.get(state.running) : undefined;
    if (running?.status === 'running' && events.some((e) => e.turnId === running.turnId && (e.type === 'TurnStarted' || e.type === 'TurnResumed'))) {
      const context = [...line.context, ...events.flatMap(messagesOf)];
      // The runner holds the context while the turn runs; it is handed back at the turn's end.
      line.context = [];
      const runner = this.runners.open(line, running, context, (r) => this.ended(line, r));
      runner.begin(events.filter((e) => e.turnId === running.turnId));
    }
    this.settle(line);
  }

  /** Brings the line's subscriptions and this engine's claims in line with what the log holds now. */
  private settle(line: ConversationLine): void {
    const { state } = line;
    if (state.phase === 'none' || line.closed) return;
    line.subscribeQueued((turn) => this.deps.subscribeQueued(turn, (reason) => this.cancelQueued(line, turn, reason)));
    // An ended turn's claim goes once the turn after it has started, or none waits.
    if (state.phase !== 'between') this.claims.releaseEnded(state.conversationId);
    if (state.phase === 'idle' && !this.runningHere(line)) this.close(line);
  }

  /** Cancels a turn still queued; one that has started is cancelled by its own runner instead. */
  private async cancelQueued(line: ConversationLine, turn: { turnId: string; tenantId: string }, reason: string): Promise<void> {
    const decided = await this.handle(line, { type: 'CancelQueuedTurn', turnId: turn.turnId, tenantId: turn.tenantId, reason }).catch((err: unknown) => {
      throw new SteerlineError('unavailable', (err as Error).message);
    });
    accepted(decided);
  }

  /**
   * A turn left this engine. One that ended: the conversation advances — its
   * follow-up queued, the oldest queued turn started — through `handle`, and
   * the ended turn's claim goes once that is in the log. One stopped by a lost
   * log, or handed over, keeps its claim and still owns the subject on paper:
   * nothing is appended after it here; whoever adopts it goes on from the log.
   */
  private ended(line: ConversationLine, runner: TurnRunner): void {
    this.runners.close(runner);
    const { turnId } = runner;
    if (runner.running || this.stopping || this.lines.get(runner.conversationId) !== line) {
      this.claims.drop(turnId);
      this.close(line);
      return;
    }
    line.context = runner.context;
    this.claims.ended(turnId);
    const advancing: Promise<void> = this.handle(line, { type: 'AdvanceConversation', engineId: this.deps.engineId })
      .then((decided) => {
        // A line let go of meanwhile (its last queued turn cancelled) has nothing to advance; its claims went with it.
        if (!line.closed) accepted(decided);
      })
      .catch((err: Error) => {
        // The log keeps the queue, and the ended turn's claim (kept unless another writer surely took over) has the reaper start it from there.
        this.logger.error({ message: 'the turn queued next could not start', turnId, error: err.message });
        if (takenOver(err)) return this.claims.release(turnId);
        this.claims.drop(turnId);
      })
      .finally(() => this.inFlight.delete(advancing));
    this.inFlight.add(advancing);
  }

  private load(tenantId: string, conversationId: string): Promise<ConversationLine | undefined> {
    const { jsm, subjects, log } = this.deps;
    return ConversationLine.read(jsm, subjects.stream, log, subjects.conversationLog(tenantId, conversationId));
  }

  private runningHere(line: ConversationLine): boolean {
    return line.conversationId !== undefined && this.runningIn(line.conversationId) !== undefined;
  }

  private close(line: ConversationLine): void {
    line.close();
    const conversationId = line.conversationId;
    if (conversationId && this.lines.get(conversationId) === line) this.lines.delete(conversationId);
  }

  /**
   * Graceful shutdown: every running turn stops here unsettled and keeps its
   * claim, so another engine (or this one, restarted) resumes it. The turns
   * queued behind them stay queued in the log and go with them: the adopter
   * rebuilds the conversation's queue from the log. A turn that ends meanwhile
   * keeps its claim too, and the adopter starts the turn after it.
   */
  async handOverAll(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.runners.all().map((r) => r.handOver()));
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    for (const line of [...this.lines.values()]) this.close(line);
  }
}

import { Logger } from '@nestjs/common';
import type { Subscription } from '@nats-io/transport-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import {
  DEFAULT_LIMITS,
  DEFAULT_MODEL,
  SteerlineError,
  isTerminalTurnEvent,
  lastMessage,
  messagesOf,
  readConversation,
  uuidv7,
  type StartTurnCommand,
  type StoredEvent,
  type Subjects,
  type TurnEvent,
} from '@steerline/contracts';
import type { EventLog } from '../log/event-log';
import type { ModelRegistry } from '../models/model.registry';
import type { ToolRegistry } from '../tools/tool.registry';
import type { TurnOwnership } from '../ownership/turn-ownership';
import { initialState } from './turn.state';
import { TurnRunner } from './turn.runner';

export interface RegistryDeps {
  jsm: JetStreamManager;
  subjects: Subjects;
  log: EventLog;
  models: ModelRegistry;
  tools: ToolRegistry;
  engineId: string;
  ownership: TurnOwnership;
  /** Subscribes the owner to a running turn's own subjects; returns the subscriptions to close at its end. */
  subscribeTurn: (runner: TurnRunner) => Subscription[];
}

/** The turns this engine owns, by turn and by conversation. */
export class TurnRegistry {
  private readonly logger = new Logger('TurnRegistry');
  private readonly byTurn = new Map<string, TurnRunner>();
  private readonly byConversation = new Map<string, TurnRunner>();
  private readonly starting = new Set<string>();
  private readonly subscriptions = new Map<string, Subscription[]>();

  constructor(private readonly deps: RegistryDeps) {}

  get size(): number {
    return this.byTurn.size;
  }

  turn(turnId: string): TurnRunner | undefined {
    return this.byTurn.get(turnId);
  }

  runningIn(conversationId: string): TurnRunner | undefined {
    return this.byConversation.get(conversationId);
  }

  /**
   * Starts a turn: reads the conversation's log (its context, and whether a turn
   * runs), then appends TurnStarted guarded by the conversation's last sequence,
   * so two engines racing to start turns of one conversation cannot both win.
   */
  async start(command: StartTurnCommand): Promise<TurnRunner> {
    const { tenantId, conversationId } = command;
    const model = command.model ?? DEFAULT_MODEL;
    if (!this.deps.models.has(model.provider)) {
      throw new SteerlineError('invalid_request', `model provider ${model.provider} is not configured on this server`);
    }
    // Only the owning tenant may learn that a turn runs: another tenant's conversation id is not found.
    const local = this.byConversation.get(conversationId);
    if (local && local.tenantId !== tenantId) throw new SteerlineError('not_found', `conversation ${conversationId} does not exist`);
    if (local || this.starting.has(conversationId)) {
      throw new SteerlineError('turn_already_running', 'a turn of this conversation is running');
    }
    this.starting.add(conversationId);
    try {
      const subject = this.deps.subjects.conversationEvents(tenantId, conversationId);
      const { events: stored, lastSeq } = await this.history(subject);
      if (lastSeq === 0) throw new SteerlineError('not_found', `conversation ${conversationId} does not exist`);
      const running = runningTurn(stored.map((s) => s.event).filter((e): e is TurnEvent => e.turnId !== null));
      if (running) throw new SteerlineError('turn_already_running', `turn ${running} of this conversation is running`, { turnId: running });
      const turnId = command.turnId ?? uuidv7();
      const runner = new TurnRunner(
        {
          log: this.deps.log,
          model: this.deps.models.get(model.provider),
          tools: this.deps.tools,
          subject,
          onEnded: (r) => this.release(r),
        },
        { ...initialState(), turnId, tenantId, conversationId },
        stored.flatMap((s) => messagesOf(s.event)),
        lastSeq,
      );
      this.byTurn.set(turnId, runner);
      this.byConversation.set(conversationId, runner);
      this.subscriptions.set(turnId, this.deps.subscribeTurn(runner));
      try {
        // Claimed before TurnStarted exists, so a crash right after it still leaves a turn another engine settles.
        await this.deps.ownership.claim({ turnId, tenantId, conversationId });
        await runner.start({
          type: 'StartTurn',
          turnId,
          tenantId,
          conversationId,
          prompt: command.prompt,
          model,
          limits: { ...DEFAULT_LIMITS, ...command.limits },
          engineId: this.deps.engineId,
          ...(command.approvals && { approvals: command.approvals }),
        });
      } catch (err) {
        this.release(runner);
        throw err;
      }
      this.logger.log({ message: 'turn started', turnId, conversationId, tenantId });
      return runner;
    } finally {
      this.starting.delete(conversationId);
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

  /** Settles every running turn (graceful shutdown): their steers are dropped honestly, not lost. */
  async abandonAll(reason: 'engine_shutdown' | 'engine_lost'): Promise<void> {
    await Promise.all([...this.byTurn.values()].map((r) => r.abandon(reason)));
  }

  private release(runner: TurnRunner): void {
    for (const sub of this.subscriptions.get(runner.turnId) ?? []) sub.unsubscribe();
    this.subscriptions.delete(runner.turnId);
    this.byTurn.delete(runner.turnId);
    if (this.byConversation.get(runner.conversationId) === runner) this.byConversation.delete(runner.conversationId);
    // A turn stopped by a lost log keeps its claim: the reaper settles it once the log is back.
    if (!runner.running) {
      this.deps.ownership.release(runner.turnId).catch((err: Error) => this.logger.warn({ message: 'could not release turn', turnId: runner.turnId, error: err.message }));
    }
  }
}

/** The id of the conversation's turn that has started and not ended, if any. */
function runningTurn(events: TurnEvent[]): string | undefined {
  let running: string | undefined;
  for (const e of events) {
    if (e.type === 'TurnStarted') running = e.turnId;
    else if (isTerminalTurnEvent(e) && e.turnId === running) running = undefined;
  }
  return running;
}

import type { Subscription } from '@nats-io/transport-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import { isTerminalTurnEvent, messagesOf, type ChatMessage, type SteerlineEvent, type ConversationLog, type TurnEvent } from '@steerline/contracts';
import { readConversationAt, type StoredEvent } from '@steerline/runtime';
import { ConversationWriter } from '../log/conversation-writer';
import type { EventLog } from '../log/event-log';
import type { ConversationCommand } from '../conversation/conversation.commands';
import { execute, type Refusal } from '../conversation/conversation.decider';
import { evolve } from '../conversation/conversation.evolve';
import { initialConversation, type ConversationState } from '../conversation/conversation.state';
import type { TurnState } from './turn.state';
import { stampContext } from './stamp';


/** What a decision appended, and the conversation after it; or why it was refused (nothing appended). */
export type Decided = { ok: true; events: TurnEvent[]; state: ConversationState } | { ok: false; refusal: Refusal };

/**
 * A conversation this engine writes (docs/design.md §8): its state as the
 * log holds it, kept up to date by the one writer of its subject, and the
 * subscriptions of its queued turns. It lives while a turn of it runs here or
 * waits for this engine to start it.
 */
export class ConversationLine {
  /** What the log holds: every batch the writer appended is applied, in order. */
  state: ConversationState;
  /** The model context while no turn of the conversation runs here; a running turn's runner holds it meanwhile. */
  context: ChatMessage[];
  /** The queued turns' own subjects: only their cancel is answered. */
  private readonly queued = new Map<string, Subscription>();
  closed = false;
  private readonly writer: ConversationWriter;
  /** Batches a running turn appends, with the turn's state before and after them (the runner's own objects, TurnLog). */
  private readonly turnStates = new WeakMap<readonly object[], { from: TurnState; to: TurnState }>();

  /** Reads the conversation as `stored` says, and writes after the subject's last sequence, `lastSeq`. */
  constructor(log: EventLog, subject: string, lastSeq: number, stored: readonly StoredEvent[]) {
    this.state = stored.reduce((s, x) => evolve(s, x.event), initialConversation());
    this.context = stored.flatMap((s) => messagesOf(s.event));
    this.writer = new ConversationWriter(log, subject, lastSeq, (events) => {
      const before = this.state;
      const turn = this.turnStates.get(events);
      const evolved = () => events.reduce(evolve, before);
      this.state = turn ? (ownStepOf(before, events, turn) ?? sharingTurn(before, evolved(), turn)) : evolved();
    });
  }

  /**
   * Reads the conversation from its subjects (both forms: history written before
   * subject partitions stays on the unpartitioned one): its events so far, and
   * the last sequence of the subject it is appended to now (counting messages
   * that do not decode: the next append must name the true last one). Undefined
   * when it does not exist. A conversation's first turn (its last event is
   * ConversationCreated) needs one get per subject.
   */
  static async read(jsm: JetStreamManager, stream: string, log: EventLog, at: ConversationLog): Promise<ConversationLine | undefined> {
    const found = await readConversationAt(jsm, stream, at);
    return found && new ConversationLine(log, at.write, found.lastSeq, found.events);
  }

  get conversationId(): string | undefined {
    return this.state.phase === 'none' ? undefined : this.state.conversationId;
  }

  /** A running turn's events, after every earlier batch (TurnLog). */
  append(events: TurnEvent[], turn?: { from: TurnState; to: TurnState }): Promise<void> {
    if (turn) this.turnStates.set(events, turn);
    return this.writer.append(events);
  }

  /**
   * Decides a command on what the log holds once every earlier batch is in,
   * then appends what was decided, fenced by the subject's last sequence.
   * `beforeAppend` runs in between: a turn is claimed before its TurnStarted exists.
   */
  decide(command: ConversationCommand, beforeAppend: (events: TurnEvent[]) => Promise<void>): Promise<Decided> {
    return this.writer.serial(async (write): Promise<Decided> => {
      if (this.closed) return { ok: false, refusal: { code: 'unavailable', message: 'this engine let go of the conversation; retry' } };
      const decision = execute(this.state, command, stampContext);
      if (!decision.ok) return decision;
      if (decision.events.length > 0) {
        await beforeAppend(decision.events);
        await write(decision.events);
        // What the writer evolved is this same value, decided from the same state inside this task: keep one copy (a running turn's runner starts from it, and shares it from then on).
        this.state = decision.state;
      }
      return { ok: true, events: decision.events, state: decision.state };
    });
  }

  /** Subscribes each turn queued now to its subjects, and unsubscribes those no longer queued. */
  subscribeQueued(subscribe: (turn: { turnId: string; tenantId: string }) => Subscription): void {
    if (this.state.phase === 'none') return;
    const { queue, turns } = this.state;
    for (const turnId of queue) {
      const turn = turns.get(turnId);
      if (turn && !this.queued.has(turnId)) this.queued.set(turnId, subscribe(turn));
    }
    for (const [turnId, sub] of this.queued) {
      if (queue.includes(turnId)) continue;
      sub.unsubscribe();
      this.queued.delete(turnId);
    }
  }

  /** Lets go of the conversation without touching the log: its queued turns stay queued there. */
  close(): void {
    this.closed = true;
    for (const sub of this.queued.values()) sub.unsubscribe();
    this.queued.clear();
  }
}

/**
 * The conversation after a batch of the running turn's own events (its steers, steps and calls: none
 * that moves the queue or the phase), evolved from the very object the runner decided it from: the
 * runner's state after it, as evolving the batch again here would make it (evolve is pure). Evolving
 * it again was work twice over, and more: the turn's steers are a GrowingMap, whose `set` on a
 * version the runner already grew copies it, so each steer cost the conversation O(steers) (issue 34).
 * Undefined for any other batch, which is evolved event by event.
 */
function ownStepOf(before: ConversationState, events: readonly SteerlineEvent[], turn: { from: TurnState; to: TurnState }): ConversationState | undefined {
  const { turnId } = turn.to;
  if (before.phase !== 'running' || before.running !== turnId || before.turns.get(turnId) !== turn.from) return undefined;
  if (!events.every((e) => e.turnId === turnId && e.type !== 'TurnQueued' && e.type !== 'TurnStarted' && !isTerminalTurnEvent(e))) return undefined;
  return { ...before, turns: new Map(before.turns).set(turnId, turn.to) };
}

/**
 * The conversation after a running turn's batch, holding the runner's state of the turn instead
 * of its own equal copy — when it evolved the batch from the very object the runner decided it
 * from (so the two are the same value). Every running turn's state is then held once, not twice.
 */
function sharingTurn(before: ConversationState, after: ConversationState, turn: { from: TurnState; to: TurnState }): ConversationState {
  if (before.phase === 'none' || after.phase === 'none') return after;
  const { turnId } = turn.to;
  if (before.turns.get(turnId) !== turn.from || !after.turns.has(turnId)) return after;
  return { ...after, turns: new Map(after.turns).set(turnId, turn.to) };
}

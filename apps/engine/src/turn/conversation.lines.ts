import type { Subscription } from '@nats-io/transport-node';
import { messagesOf, uuidv7, type ChatMessage, type StoredEvent, type TurnEvent } from '@steerline/contracts';
import { ConversationWriter } from '../log/conversation-writer';
import type { EventLog } from '../log/event-log';
import type { ConversationCommand } from '../conversation/conversation.commands';
import { execute, type Refusal } from '../conversation/conversation.decider';
import { evolve } from '../conversation/conversation.evolve';
import { initialConversation, type ConversationState } from '../conversation/conversation.state';

const stampContext = () => ({ id: uuidv7(), at: new Date().toISOString() });

/** What a decision appended, and the conversation after it; or why it was refused (nothing appended). */
export type Decided = { ok: true; events: TurnEvent[]; state: ConversationState } | { ok: false; refusal: Refusal };

/**
 * A conversation this engine writes (docs/design.md §8.3): its state as the
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
  readonly queued = new Map<string, Subscription>();
  closed = false;
  private readonly writer: ConversationWriter;

  /** Reads the conversation as `stored` says, and writes after the subject's last sequence, `lastSeq`. */
  constructor(log: EventLog, subject: string, lastSeq: number, stored: readonly StoredEvent[]) {
    this.state = stored.reduce((s, x) => evolve(s, x.event), initialConversation());
    this.context = stored.flatMap((s) => messagesOf(s.event));
    this.writer = new ConversationWriter(log, subject, lastSeq, (events) => {
      this.state = events.reduce(evolve, this.state);
    });
  }

  get conversationId(): string | undefined {
    return this.state.phase === 'none' ? undefined : this.state.conversationId;
  }

  /** A running turn's events, after every earlier batch. */
  append(events: TurnEvent[]): Promise<void> {
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
      }
      return { ok: true, events: decision.events, state: decision.state };
    });
  }

  /** Lets go of the conversation without touching the log: its queued turns stay queued there. */
  close(): void {
    this.closed = true;
    for (const sub of this.queued.values()) sub.unsubscribe();
    this.queued.clear();
  }
}

import type { Subscription } from '@nats-io/transport-node';
import { DEFAULT_LIMITS, DEFAULT_MODEL, MAX_QUEUED_TURNS, SteerlineError, uuidv7, type StartTurnAnswer, type StartTurnCommand } from '@steerline/contracts';
import { ConversationWriter } from '../log/conversation-writer';
import type { EventLog } from '../log/event-log';
import { execute } from './turn.decider';
import { initialState, type EndedTurn, type QueuedTurn as Queued, type TurnSpec, type TurnState } from './turn.state';

/** A turn waiting behind the running one, in this engine's queue for its conversation. */
interface QueuedTurn {
  state: Queued;
  subscription?: Subscription;
}

/**
 * What the owner of a conversation holds while it runs a turn of it or has
 * turns queued: the one writer of its subject and the queue, oldest first.
 */
export interface ConversationLine {
  tenantId: string;
  writer: ConversationWriter;
  queued: QueuedTurn[];
}

/** What a turn runs with: given at its start, or kept while it is queued. */

export interface LinesDeps {
  log: EventLog;
  /** Subscribes the owner to a queued turn's subjects: only its cancel is answered. */
  subscribeQueued: (turn: { turnId: string; tenantId: string }, cancel: (reason: string) => Promise<void>) => Subscription;
  /** Whether this engine runs a turn of the conversation now. */
  running: (conversationId: string) => boolean;
}

/** What a queued turn was queued with, to start it. */
export function queuedSpec(queued: Queued): TurnSpec {
  return queued.spec;
}

const stampContext = () => ({ id: uuidv7(), at: new Date().toISOString() });

/**
 * The conversations this engine writes, each with the turns queued behind its
 * running turn (docs/design.md §8). A line lives while a turn of its
 * conversation runs here or one is queued; the registry starts the queued
 * turns in order as each running one ends.
 */
export class ConversationLines {
  private readonly lines = new Map<string, ConversationLine>();

  constructor(private readonly deps: LinesDeps) {}

  get(conversationId: string): ConversationLine | undefined {
    return this.lines.get(conversationId);
  }

  /** Becomes the conversation's one writer, from the subject's last sequence read from the log. */
  open(conversationId: string, tenantId: string, subject: string, lastSeq: number): ConversationLine {
    const line: ConversationLine = { tenantId, writer: new ConversationWriter(this.deps.log, subject, lastSeq), queued: [] };
    this.lines.set(conversationId, line);
    return line;
  }

  /** Queues a turn behind the running one: refused once MAX_QUEUED_TURNS wait. */
  async enqueue(line: ConversationLine, command: StartTurnCommand): Promise<StartTurnAnswer> {
    if (line.queued.length >= MAX_QUEUED_TURNS) {
      throw new SteerlineError('turn_queue_full', `${MAX_QUEUED_TURNS} turns already wait in this conversation`, { maxQueuedTurns: MAX_QUEUED_TURNS });
    }
    const turnId = command.turnId ?? uuidv7();
    const { tenantId, conversationId, prompt, approvals } = command;
    const queued = await this.queue(line, { ...initialState(), turnId, tenantId, conversationId }, {
      prompt,
      model: command.model ?? DEFAULT_MODEL,
      limits: { ...DEFAULT_LIMITS, ...command.limits },
      approvals,
    });
    return { turnId, status: 'queued', position: queued };
  }

  /** Queues an ended turn's follow-up (its `next_turn` steers) with the ended turn's model, limits and approvals. */
  queueFollowUp(line: ConversationLine, ended: Pick<EndedTurn, 'turnId' | 'tenantId' | 'conversationId' | 'spec'>, followUp: { turnId: string; prompt: string }): Promise<number> {
    const { tenantId, conversationId } = ended;
    const spec = { ...ended.spec, prompt: followUp.prompt };
    return this.queue(line, { ...initialState(), turnId: followUp.turnId, tenantId, conversationId }, spec, ended.turnId);
  }

  /** Appends TurnQueued through the conversation's writer; answers the turn's position. */
  private async queue(line: ConversationLine, state: TurnState, spec: TurnSpec, fromTurnId?: string): Promise<number> {
    const position = line.queued.length + 1;
    const { state: queued, events } = execute(state, { type: 'QueueTurn', ...spec, position, ...(fromTurnId && { fromTurnId }) }, stampContext);
    if (queued.status !== 'queued') throw new SteerlineError('internal', `turn ${state.turnId} was not queued`);
    const entry: QueuedTurn = { state: queued };
    // In the queue before the append resolves, so the cap and the positions hold for concurrent requests.
    line.queued.push(entry);
    try {
      await line.writer.append(events);
    } catch (err) {
      line.queued.splice(line.queued.indexOf(entry), 1);
      if (err instanceof SteerlineError) throw err;
      // The cause says whether another writer came first (StaleWriterError) or the log is away.
      throw Object.assign(new SteerlineError('unavailable', (err as Error).message), { cause: err });
    }
    if (line.queued.includes(entry)) {
      entry.subscription = this.deps.subscribeQueued(queued, (reason) => this.cancel(line, queued.turnId, reason));
    }
    return position;
  }

  /** A turn the log says is queued, taken into this engine's line (adopted with the running turn). */
  requeue(line: ConversationLine, state: Queued): void {
    const entry: QueuedTurn = { state };
    line.queued.push(entry);
    entry.subscription = this.deps.subscribeQueued(state, (reason) => this.cancel(line, state.turnId, reason));
  }

  /** The oldest queued turn, out of the queue (its own subjects closed: it is about to run). */
  next(line: ConversationLine): Queued | undefined {
    const next = line.queued.shift();
    next?.subscription?.unsubscribe();
    return next?.state;
  }

  /** Lets go of a conversation's line without touching the log: its queued turns stay queued there. */
  close(conversationId: string): void {
    const line = this.lines.get(conversationId);
    if (!line) return;
    for (const q of line.queued) q.subscription?.unsubscribe();
    this.lines.delete(conversationId);
  }

  closeAll(): void {
    for (const conversationId of [...this.lines.keys()]) this.close(conversationId);
  }

  dropIfIdle(conversationId: string): void {
    const line = this.lines.get(conversationId);
    if (line && line.queued.length === 0 && !this.deps.running(conversationId)) this.lines.delete(conversationId);
  }

  /** Cancels a turn still queued; one that has started is cancelled by its own runner instead. */
  private async cancel(line: ConversationLine, turnId: string, reason: string): Promise<void> {
    const index = line.queued.findIndex((q) => q.state.turnId === turnId);
    if (index < 0) throw new SteerlineError('turn_not_running', `turn ${turnId} is no longer queued`);
    // Out of the queue at once: the start of the next turn can no longer pick it.
    const [entry] = line.queued.splice(index, 1);
    entry.subscription?.unsubscribe();
    const { events } = execute(entry.state, { type: 'CancelTurn', reason }, stampContext);
    await line.writer.append(events).catch((err: Error) => {
      throw new SteerlineError('unavailable', err.message);
    });
    this.dropIfIdle(entry.state.conversationId);
  }
}

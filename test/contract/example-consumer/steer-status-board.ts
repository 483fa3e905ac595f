// An example of a service another team would write: it follows the steer events
// and keeps a status table per steer. It is built only on the consumer kit in
// @steerline/contracts and @steerline/runtime — no engine, gateway or persistence code — so what it
// needs is what any outside consumer has.
import { STEER_EVENTS, type EventType, type Receipt, type SteerlineEvent } from '@steerline/contracts';
import { consumeEvents, type ConsumeEventsOptions, type EventConsumer } from '@steerline/runtime';

/** One row per steer, shaped like the receipt the HTTP API answers with. */
export type SteerRow = Receipt & { conversationId: string };

/**
 * What the board keeps. A real service stores rows and checkpoint in one
 * database transaction; here it is memory shared across restarts, which is
 * enough to show resuming from the checkpoint.
 */
export interface BoardStore {
  rows: Map<string, SteerRow>;
  checkpoint: number;
  /** How many times each event was applied: an audit that no event counted twice. */
  applied: Map<string, number>;
}

export function emptyStore(): BoardStore {
  return { rows: new Map(), checkpoint: 0, applied: new Map() };
}

export class SteerStatusBoard {
  private consumer?: EventConsumer;

  constructor(readonly store: BoardStore = emptyStore()) {}

  /** Follows the stream from just after the stored checkpoint; only steer events are decoded. */
  async start(nc: ConsumeEventsOptions['nc'], prefix: string, durable = 'steer-status-board'): Promise<void> {
    this.consumer = await consumeEvents({
      nc,
      prefix,
      durable,
      types: [...STEER_EVENTS] as EventType[],
      fromSeq: this.store.checkpoint + 1,
      onEvent: (event) => this.apply(event),
      checkpoint: (seq) => {
        this.store.checkpoint = seq;
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }

  /** Rejects when the consumer stopped on an error. */
  get done(): Promise<void> {
    return this.consumer?.done ?? Promise.resolve();
  }

  row(steerId: string): SteerRow | undefined {
    return this.store.rows.get(steerId);
  }

  private apply(event: SteerlineEvent): void {
    this.store.applied.set(event.id, (this.store.applied.get(event.id) ?? 0) + 1);
    switch (event.type) {
      case 'SteerQueued': {
        const { steerId, text, position } = event.data;
        this.store.rows.set(steerId, { steerId, turnId: event.turnId, conversationId: event.conversationId, status: 'queued', position, text });
        return;
      }
      case 'SteerEdited':
        // A queued steer's new text: the one the model will read, or the one handed back.
        this.settle(event.data.steerId, { text: event.data.text });
        return;
      case 'SteeringDelivered': {
        const { steerId, step, boundary, requestStep } = event.data;
        this.settle(steerId, { status: 'delivered', step, boundary, requestStep });
        return;
      }
      case 'SteerDropped': {
        const { steerId, reason, nextTurnId } = event.data;
        this.settle(steerId, { status: 'dropped', reason, ...(nextTurnId && { nextTurnId }) });
        return;
      }
    }
  }

  private settle(steerId: string, change: Partial<SteerRow>): void {
    const row = this.store.rows.get(steerId);
    // Every settlement follows its SteerQueued in the log (invariant I2); a missing row is a bug upstream.
    if (!row) throw new Error(`steer ${steerId} was settled before it was queued`);
    this.store.rows.set(steerId, { ...row, ...change });
  }
}

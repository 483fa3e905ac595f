import { Logger } from '@nestjs/common';
import type { JetStreamManager } from '@nats-io/jetstream';
import { readConversation, uuidv7, type Subjects, type TurnEvent } from '@steerline/contracts';
import { StaleWriterError, type EventLog } from '../log/event-log';
import { execute } from '../turn/turn.decider';
import { evolve } from '../turn/turn.evolve';
import { queuedTurns } from '../turn/turn.history';
import { initialState } from '../turn/turn.state';
import type { OwnedTurn, TurnOwnership } from './turn-ownership';

/**
 * Settles the turns of engines that died (DESIGN §2.8): every queued steer is
 * dropped `engine_lost`, then the turn fails, then the turns queued behind it
 * are cancelled `engine_lost` — decided by the same decider, and
 * appended guarded by the conversation's last sequence, so a zombie owner that
 * comes back is refused and two reapers cannot both settle one turn.
 */
export class OrphanReaper {
  private readonly logger = new Logger('OrphanReaper');
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly deps: { jsm: JetStreamManager; s: Subjects; log: EventLog; ownership: TurnOwnership; runsHere: (turnId: string) => boolean },
  ) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      if (!this.running) this.running = this.sweep().finally(() => (this.running = undefined));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass: settle every orphaned turn. Returns how many were settled here. */
  async sweep(): Promise<number> {
    let settled = 0;
    const orphans = await this.deps.ownership.orphans(this.deps.runsHere).catch(() => []);
    for (const turn of orphans) {
      try {
        if (await this.settle(turn)) settled += 1;
        await this.deps.ownership.release(turn.turnId, turn.engineId);
      } catch (err) {
        // Another engine settled it first, or the log is down: the next pass decides again.
        this.deps.ownership.retryLater(turn.engineId);
        if (!(err instanceof StaleWriterError)) this.logger.warn({ message: 'could not settle orphaned turn', turnId: turn.turnId, error: (err as Error).message });
      }
    }
    return settled;
  }

  private async settle(turn: OwnedTurn): Promise<boolean> {
    const subject = this.deps.s.conversationEvents(turn.tenantId, turn.conversationId);
    const { events: stored, lastSeq } = await readConversation(this.deps.jsm, this.deps.s.stream, subject);
    const events = stored.map((x) => x.event).filter((e): e is TurnEvent => e.turnId === turn.turnId);
    const state = events.reduce(evolve, { ...initialState(), turnId: turn.turnId, tenantId: turn.tenantId, conversationId: turn.conversationId });
    if (state.status !== 'running') return false;
    const context = () => ({ id: uuidv7(), at: new Date().toISOString() });
    const { events: settling } = execute(state, { type: 'AbandonTurn', reason: 'engine_lost' }, context);
    // Turns queued behind it lived in the lost engine's memory: cancelled, so the conversation can go on.
    const all = stored.map((x) => x.event).filter((e): e is TurnEvent => e.turnId !== null);
    for (const queued of queuedTurns(all)) settling.push(...execute(queued, { type: 'CancelTurn', reason: 'engine_lost' }, context).events);
    await this.deps.log.append(subject, settling, lastSeq);
    this.logger.log({ message: 'settled a turn whose engine was lost', turnId: turn.turnId, engineId: turn.engineId, steersDropped: settling.filter((e) => e.type === 'SteerDropped').length });
    return true;
  }
}

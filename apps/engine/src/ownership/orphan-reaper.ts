import { Logger } from '@nestjs/common';
import { StaleWriterError } from '../log/event-log';
import type { TurnRegistry } from '../turn/turn.registry';
import type { TurnOwnership } from './turn-ownership';

/**
 * Finds the turns of engines that died or stopped and adopts them here
 * (durable turns): the registry rebuilds each from its log and appends
 * TurnResumed guarded by the conversation's last sequence, so two reapers
 * cannot both take one turn and a frozen former owner is fenced. A turn moved
 * more than the resume limit fails `engine_lost`, its steers dropped first.
 */
export class OrphanReaper {
  private readonly logger = new Logger('OrphanReaper');
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(private readonly deps: { ownership: TurnOwnership; turns: TurnRegistry; runsHere: (turnId: string) => boolean }) {}

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

  /** One pass: adopt every orphaned turn. Returns how many were resumed (or failed at the resume limit) here. */
  async sweep(): Promise<number> {
    let adopted = 0;
    const { ownership, turns } = this.deps;
    const orphans = await ownership.orphans(this.deps.runsHere).catch(() => []);
    for (const turn of orphans) {
      try {
        const outcome = await turns.adopt(turn);
        if (outcome === 'resumed' || outcome === 'failed' || outcome === 'advanced') adopted += 1;
        // The lost engine's claim is done with: the turn ended, moved on, or is claimed here now.
        if (turn.engineId !== ownership.engineId) await ownership.release(turn.turnId, turn.engineId);
        else if (outcome !== 'resumed' && outcome !== 'taken') await ownership.release(turn.turnId);
      } catch (err) {
        // Another engine adopted it first, or the log is down: the next pass decides again.
        ownership.retryLater(turn.engineId);
        if (!(err instanceof StaleWriterError)) this.logger.warn({ message: 'could not adopt orphaned turn', turnId: turn.turnId, error: (err as Error).message });
      }
    }
    return adopted;
  }
}

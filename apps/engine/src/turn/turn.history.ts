import { isTerminalTurnEvent, type TurnEvent } from '@steerline/contracts';

/**
 * The id of a turn of the conversation that has not ended: running, or queued
 * and not yet started or cancelled (DESIGN §8.3). A new turn may start only
 * when there is none.
 */
export function busyTurn(events: TurnEvent[]): string | undefined {
  const open = new Set<string>();
  let first: string | undefined;
  for (const e of events) {
    if (e.type === 'TurnStarted' || e.type === 'TurnQueued') open.add(e.turnId);
    else if (isTerminalTurnEvent(e)) open.delete(e.turnId);
  }
  for (const id of open) first ??= id;
  return first;
}

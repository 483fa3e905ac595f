import { isTerminalTurnEvent, type TurnEvent } from '@steerline/contracts';
import { evolve } from './turn.evolve';
import { initialState, type QueuedTurn } from './turn.state';

/**
 * The id of a turn of the conversation that has not ended: running, or queued
 * and not yet started or cancelled (docs/design.md §8). A new turn may start only
 * when there is none.
 */
export function busyTurn(events: TurnEvent[]): string | undefined {
  return firstOpen(events, (e) => e.type === 'TurnStarted' || e.type === 'TurnQueued');
}

/** The id of a turn of the conversation that started and has not ended. */
export function runningTurn(events: TurnEvent[]): string | undefined {
  return firstOpen(events, (e) => e.type === 'TurnStarted');
}

/** The first turn (in the order they opened) that an `opens` event opened and no terminal event ended. */
function firstOpen(events: TurnEvent[], opens: (e: TurnEvent) => boolean): string | undefined {
  const open = new Set<string>();
  for (const e of events) {
    if (opens(e)) open.add(e.turnId);
    else if (isTerminalTurnEvent(e)) open.delete(e.turnId);
  }
  return open.values().next().value;
}

/** The turns of the conversation still queued (TurnQueued, neither started nor ended), oldest first, as their states. */
export function queuedTurns(events: TurnEvent[]): QueuedTurn[] {
  const byTurn = new Map<string, TurnEvent[]>();
  for (const e of events) byTurn.set(e.turnId, [...(byTurn.get(e.turnId) ?? []), e]);
  return [...byTurn.values()]
    .filter((list) => list.length === 1 && list[0].type === 'TurnQueued')
    .flatMap(([queued]) => {
      const state = evolve({ ...initialState(), turnId: queued.turnId, tenantId: queued.tenantId, conversationId: queued.conversationId }, queued);
      return state.status === 'queued' ? [state] : [];
    });
}

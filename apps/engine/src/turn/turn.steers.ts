import { SteerlineError, normalizeSteerText, type DropReason } from '@steerline/contracts';
import type { TurnCommand } from './turn.commands';
import type { TurnEventDraft } from './turn.decider';
import { hasRun, type RunningTurn, type SteerRecord, type TurnState } from './turn.state';

/*
 * A steer's own lifecycle (docs/design.md §2): accept, withdraw, edit, expire,
 * and what a text-only end does with `drop` and `next_turn` steers. Pure, like
 * the rest of the decider; each function answers for one command or one moment.
 */

export function submitSteer(command: Extract<TurnCommand, { type: 'SubmitSteer' }>, state: RunningTurn): TurnEventDraft[] {
  // A resubmitted id is the same steer: same receipt, no second event (docs/design.md §2.11).
  if (state.steers.has(command.steerId)) return [];
  const text = normalizeSteerText(command.text);
  const { maxQueued } = state.spec.limits;
  if (state.queue.length >= maxQueued) {
    throw new SteerlineError('queue_full', `${maxQueued} steers already wait for the next boundary`, { maxQueued });
  }
  const { steerId, onTurnEnd, expiresAt } = command;
  // Its follow-up would be queued, and an external turn's runner is only there for this turn (docs/runner-protocol.md, "Start").
  if (onTurnEnd === 'next_turn' && state.spec.runner === 'external') {
    throw new SteerlineError('invalid_request', 'an external turn’s steers cannot move to a next turn (onTurnEnd "next_turn"): nobody would run it; use "drop" or "continue"');
  }
  return [
    {
      type: 'SteerQueued',
      data: {
        steerId,
        text,
        position: state.nextPosition,
        queueDepth: state.queue.length + 1,
        ...(onTurnEnd && onTurnEnd !== 'continue' && { onTurnEnd }),
        ...(expiresAt && { expiresAt }),
      },
    },
  ];
}

export function withdraw(steerId: string, state: TurnState): TurnEventDraft[] {
  const steer = queuedOrSettled(steerId, state);
  if (steer.status === 'dropped') return [];
  return [{ type: 'SteerDropped', data: { steerId, text: steer.text, position: steer.position, reason: 'withdrawn' } }];
}

/**
 * Replaces a queued steer's text; its position is unchanged. Decided here, so
 * an edit and the boundary that delivers the steer never both win: whichever
 * the decider sees first is what happened.
 */
export function editSteer(command: Extract<TurnCommand, { type: 'EditSteer' }>, state: TurnState): TurnEventDraft[] {
  const text = normalizeSteerText(command.text);
  const steer = queuedOrSettled(command.steerId, state);
  if (steer.status === 'dropped') {
    const { steerId, position, reason, nextTurnId } = steer;
    throw new SteerlineError('steer_dropped', `the steer was dropped: ${reason}`, { steerId, turnId: state.turnId, position, text: steer.text, reason, ...(nextTurnId && { nextTurnId }) });
  }
  if (steer.text === text) return [];
  return [{ type: 'SteerEdited', data: { steerId: command.steerId, text, previousText: steer.text } }];
}

/** A deadline that finds the steer delivered, dropped or already gone changes nothing. */
export function expireSteer(steerId: string, state: RunningTurn): TurnEventDraft[] {
  const steer = state.steers.get(steerId);
  if (!steer || steer.status !== 'queued') return [];
  return [{ type: 'SteerDropped', data: { steerId, text: steer.text, position: steer.position, reason: 'expired' } }];
}

/** The steer, refused as unknown or already delivered; a queued or dropped one is returned. */
function queuedOrSettled(steerId: string, state: TurnState): SteerRecord {
  const steer = hasRun(state) ? state.steers.get(steerId) : undefined;
  if (!steer) throw new SteerlineError('not_found', `steer ${steerId} is not part of this turn`);
  if (steer.status === 'delivered') throw new SteerlineError('already_delivered', 'the model already has this steer', { steerId, step: steer.step });
  return steer;
}

/**
 * At a text-only end: `drop` steers are dropped `turn_ended`, `next_turn` ones
 * `moved_to_next_turn` to the turn's one follow-up turn, all in position order.
 */
export function turnEndDrops(state: RunningTurn, candidateNextTurnId?: string): TurnEventDraft[] {
  const nextTurnId = state.nextTurnId ?? candidateNextTurnId;
  return queuedSteers(state).flatMap((s): TurnEventDraft[] => {
    const { steerId } = s;
    if (s.onTurnEnd === 'continue') return [];
    const base = { steerId, text: s.text, position: s.position };
    if (s.onTurnEnd === 'drop') return [{ type: 'SteerDropped', data: { ...base, reason: 'turn_ended' } }];
    if (!nextTurnId) throw new SteerlineError('internal', 'a next_turn steer reached a text-only end without a follow-up turn id');
    return [{ type: 'SteerDropped', data: { ...base, reason: 'moved_to_next_turn', nextTurnId } }];
  });
}

/** Drops every queued steer, in position order, with one reason. */
export function dropAll(state: RunningTurn, reason: DropReason): TurnEventDraft[] {
  return queuedSteers(state).map(({ steerId, text, position }) => ({ type: 'SteerDropped', data: { steerId, text, position, reason } }));
}

/** The steers waiting for the next boundary, in position order. */
export function queuedSteers(state: RunningTurn): SteerRecord[] {
  return state.queue.flatMap((id) => state.steers.get(id) ?? []);
}

/**
 * The follow-up turn of an ended turn: the texts of the steers it moved
 * (`moved_to_next_turn`), in position order, as one prompt.
 */
export function followUpOf(state: TurnState): { turnId: string; prompt: string } | undefined {
  if (!hasRun(state) || !state.nextTurnId) return undefined;
  const moved = [...state.steers.values()].filter((s) => s.reason === 'moved_to_next_turn').sort((a, b) => a.position - b.position);
  return { turnId: state.nextTurnId, prompt: moved.map((s) => s.text).join('\n\n') };
}

import { isTerminalTurnEvent, type SteerlineEvent } from '@steerline/contracts';
import { evolve as evolveTurn } from '../turn/turn.evolve';
import { initialState as newTurn } from '../turn/turn.state';
import { missingFollowUp, type ConversationState, type KnownConversation } from './conversation.state';

/** Applies one event of the conversation's subject. Pure: the same events always give the same state. */
export function evolve(state: ConversationState, event: SteerlineEvent): ConversationState {
  if (event.type === 'ConversationCreated') return { phase: 'idle', conversationId: event.conversationId, tenantId: event.tenantId, turns: new Map(), queue: [] };
  if (state.phase === 'none') return state;
  const { turnId } = event;
  const before = state.turns.get(turnId) ?? { ...newTurn(), turnId, tenantId: event.tenantId, conversationId: event.conversationId };
  const turn = evolveTurn(before, event);
  const turns = new Map(state.turns).set(turnId, turn);
  // The running turn's own events (its steers, steps, calls) move neither the queue nor the phase:
  // the bulk of a conversation's events, so the phase is not worked out again for each.
  if (state.phase === 'running' && state.running === turnId && event.type !== 'TurnQueued' && event.type !== 'TurnStarted' && !isTerminalTurnEvent(event)) return { ...state, turns };
  let { queue, lastEnded } = state;
  let running = state.phase === 'running' ? state.running : undefined;
  if (event.type === 'TurnQueued') queue = [...queue, turnId];
  else if (event.type === 'TurnStarted') {
    queue = queue.filter((id) => id !== turnId);
    // The turn before it is done with: its follow-up, if any, is queued by now.
    if (lastEnded) turns.delete(lastEnded);
    lastEnded = undefined;
    running = turnId;
  } else if (isTerminalTurnEvent(event)) {
    if (before.status === 'queued') {
      // A queued turn cancelled: it never ran and nothing follows from it.
      queue = queue.filter((id) => id !== turnId);
      turns.delete(turnId);
    } else if (running === turnId) {
      running = undefined;
      if (lastEnded) turns.delete(lastEnded);
      lastEnded = turnId;
    }
  }
  return withPhase({ conversationId: state.conversationId, tenantId: state.tenantId, turns, queue, ...(lastEnded && { lastEnded }) }, running);
}

function withPhase(known: Omit<KnownConversation, 'phase'>, running: string | undefined): KnownConversation {
  if (running) return { ...known, phase: 'running', running };
  if (known.queue.length > 0 || missingFollowUp(known)) return { ...known, phase: 'between' };
  return { ...known, phase: 'idle' };
}

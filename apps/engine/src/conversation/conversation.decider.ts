import { MAX_QUEUED_TURNS, SteerlineError, type ErrorCode, type TurnEvent } from '@steerline/contracts';
import { decide as decideTurn, stamp, type StampContext, type TurnEventDraft } from '../turn/turn.decider';
import type { TurnCommand } from '../turn/turn.commands';
import { initialState as newTurn, specOf, type TurnState } from '../turn/turn.state';
import { followUpOf } from '../turn/turn.steers';
import type { ConversationCommand } from './conversation.commands';
import { evolve } from './conversation.evolve';
import { busyTurn, missingFollowUp, type ConversationState, type KnownConversation } from './conversation.state';

/** An event the decider wants appended to the conversation, before the shell gives it id, seq and time. */
export type ConversationDraft = TurnEventDraft & { turnId: string };

/**
 * Why a command was refused. `claim_stale` is the adoption's own: the log no
 * longer names the claim's engine as the turn's owner, so the claim is void.
 */
export interface Refusal {
  code: ErrorCode | 'claim_stale';
  message: string;
  details?: Record<string, unknown>;
}

/** The events a command produces, in order, or its refusal: nothing is appended then. */
export type Decision = { ok: true; events: ConversationDraft[] } | { ok: false; refusal: Refusal };

const ok = (events: ConversationDraft[]): Decision => ({ ok: true, events });
const refuse = (code: Refusal['code'], message: string, details?: Record<string, unknown>): Decision => ({ ok: false, refusal: { code, message, ...(details && { details }) } });

/**
 * Every rule of a conversation's turns is decided here (docs/design.md §8,
 * §10): which turn starts, the queue and its positions, a queued turn's
 * cancel, the next turn after one ends (its follow-up first), and the adoption
 * of a conversation whose engine is gone. A turn's own rules are its decider's:
 * this one delegates to it. Pure: no clock, no ids, no I/O.
 */
export function decide(command: ConversationCommand, state: ConversationState): Decision {
  if (state.phase === 'none') return refuse('not_found', 'the conversation does not exist');
  switch (command.type) {
    case 'StartTurn':
      return startTurn(command, state);
    case 'CancelQueuedTurn': {
      const turn = state.turns.get(command.turnId);
      if (turn?.status !== 'queued') return refuse('turn_not_running', `turn ${command.turnId} is no longer queued`);
      if (turn.tenantId !== command.tenantId) return refuse('not_found', `turn ${command.turnId} not found`);
      return forTurn(state, command.turnId, { type: 'CancelTurn', reason: command.reason });
    }
    case 'AdvanceConversation':
      return advance(state, command.engineId);
    case 'AdoptConversation':
      return adopt(command, state);
    case 'ForTurn':
      return forTurn(state, command.turnId, command.command);
  }
}

function startTurn(command: Extract<ConversationCommand, { type: 'StartTurn' }>, state: KnownConversation): Decision {
  const { turnId, tenantId, engineId } = command;
  // Only the owning tenant may learn that a turn runs: another tenant's conversation is not found.
  if (tenantId !== state.tenantId) return refuse('not_found', `conversation ${state.conversationId} does not exist`);
  const busy = busyTurn(state);
  const spec = specOf(command);
  if (busy === undefined) return forTurn(state, turnId, { type: 'StartTurn', turnId, tenantId, conversationId: state.conversationId, engineId, ...spec });
  if (command.whenBusy !== 'queue') return refuse('turn_already_running', `turn ${busy} of this conversation is running or queued`, { turnId: busy });
  if (state.queue.length >= MAX_QUEUED_TURNS) {
    return refuse('turn_queue_full', `${MAX_QUEUED_TURNS} turns already wait in this conversation`, { maxQueuedTurns: MAX_QUEUED_TURNS });
  }
  // The position is read from the log: 1 is the turn that starts next.
  return forTurn(state, turnId, { type: 'QueueTurn', ...spec, position: state.queue.length + 1 });
}

/**
 * Between turns: the ended turn's follow-up (its `next_turn` steers' texts) is
 * queued first when the log lacks it — over the cap if need be, so no moved
 * text is lost — then the oldest queued turn starts. Anything else: nothing to do.
 */
function advance(state: KnownConversation, engineId: string): Decision {
  if (state.phase !== 'between') return ok([]);
  const drafts: ConversationDraft[] = [];
  let next: KnownConversation = state;
  const ended = state.lastEnded ? state.turns.get(state.lastEnded) : undefined;
  const followUp = ended && missingFollowUp(state) ? followUpOf(ended) : undefined;
  if (ended && followUp && ended.status !== 'new' && ended.status !== 'queued') {
    // A queued turn is never external (its runner would hold no lease): the follow-up keeps the spec without the runner's.
    const { runner: _runner, leaseDigest: _lease, ...spec } = ended.spec;
    const queued = forTurn(next, followUp.turnId, { type: 'QueueTurn', ...spec, prompt: followUp.prompt, position: next.queue.length + 1, fromTurnId: ended.turnId });
    if (!queued.ok) return queued;
    drafts.push(...queued.events);
    next = after(next, queued.events);
  }
  const head = next.queue[0] === undefined ? undefined : next.turns.get(next.queue[0]);
  if (head?.status !== 'queued') return ok(drafts);
  const { turnId, tenantId, conversationId } = head;
  const started = forTurn(next, turnId, { type: 'StartTurn', turnId, tenantId, conversationId, engineId, ...head.spec });
  return started.ok ? ok([...drafts, ...started.events]) : started;
}

/**
 * A running turn whose claim names the engine the log names as its owner is
 * resumed (the turn's decider says how); the conversation goes on at once when
 * the resume ended it (past the resume limit). A turn that had ended: the turn
 * after it starts if it never did.
 */
function adopt(command: Extract<ConversationCommand, { type: 'AdoptConversation' }>, state: KnownConversation): Decision {
  const { orphan, engineId, limit, rerunnable, nextTurnId } = command;
  if (state.phase !== 'running' || state.running !== orphan.turnId) return advance(state, engineId);
  const turn = state.turns.get(orphan.turnId);
  if (turn?.status === 'running' && turn.engineId !== orphan.engineId) {
    return refuse('claim_stale', `turn ${orphan.turnId} moved on to engine ${turn.engineId}`, { engineId: turn.engineId });
  }
  const resumed = forTurn(state, orphan.turnId, { type: 'ResumeTurn', engineId, limit, rerunnable, nextTurnId });
  if (!resumed.ok) return resumed;
  const then = advance(after(state, resumed.events), engineId);
  return then.ok ? ok([...resumed.events, ...then.events]) : then;
}

/** One turn's command, decided by the turn's decider on that turn's state. */
function forTurn(state: KnownConversation, turnId: string, command: TurnCommand): Decision {
  try {
    return ok(decideTurn(command, turnOf(state, turnId)).map((draft) => ({ ...draft, turnId })));
  } catch (err) {
    if (!(err instanceof SteerlineError)) throw err;
    return refuse(err.code, err.message, err.details);
  }
}

function turnOf(state: KnownConversation, turnId: string): TurnState {
  return state.turns.get(turnId) ?? { ...newTurn(), turnId, tenantId: state.tenantId, conversationId: state.conversationId };
}

/** The state after drafts, for decisions that span several turns. */
function after(state: KnownConversation, drafts: ConversationDraft[]): KnownConversation {
  return stampAll(state, drafts, () => ({ id: '', at: '' })).state as KnownConversation;
}

/** Gives each draft its envelope (its turn's next `seq`, an id, a time), evolving the conversation as it goes. */
export function stampAll(state: ConversationState, drafts: ConversationDraft[], context: () => StampContext): { state: ConversationState; events: TurnEvent[] } {
  const events: TurnEvent[] = [];
  let next = state;
  for (const { turnId, ...draft } of drafts) {
    if (next.phase === 'none') break;
    const event = stamp(turnOf(next, turnId), draft as TurnEventDraft, context());
    events.push(event);
    next = evolve(next, event);
  }
  return { state: next, events };
}

/** Decides a command and stamps its events: the step the registry and the specs take. */
export function execute(state: ConversationState, command: ConversationCommand, context: () => StampContext): { ok: true; state: ConversationState; events: TurnEvent[] } | { ok: false; refusal: Refusal } {
  const decision = decide(command, state);
  return decision.ok ? { ok: true, ...stampAll(state, decision.events, context) } : decision;
}

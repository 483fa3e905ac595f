import { DEFAULT_LIMITS, SteerlineError, type ApprovalPolicy, type TurnLimits, type TurnEvent, type ToolCall } from '@steerline/contracts';
import { decide, execute, stamp, type StampContext, type TurnEventDraft } from './turn.decider';
import type { TurnCommand } from './turn.commands';
import { evolve } from './turn.evolve';
import { hasRun, initialState, type EndedTurn, type RunningTurn, type TurnState } from './turn.state';
import { asDecision, specification } from '../testing/decider-specification';

/** Test helpers: a turn driven only through commands, as the runner drives it. */
export const TURN_ID = '0190a000-0000-7000-8000-000000000001';
export const CONVERSATION_ID = '0190a000-0000-7000-8000-000000000002';

let counter = 0;
export function steerId(n: number): string {
  return `0190a000-0000-7000-8000-${String(n).padStart(12, '0')}`;
}

function context(): StampContext {
  counter += 1;
  return { id: `0190b000-0000-7000-8000-${String(counter).padStart(12, '0')}`, at: new Date(0).toISOString() };
}

export function newTurnState(): TurnState {
  return { ...initialState(), turnId: TURN_ID, tenantId: 'default', conversationId: CONVERSATION_ID };
}

/** The turn's decider as a given/when/then specification; the given facts are drafts, stamped in order. */
export const given = specification<TurnCommand, TurnEventDraft, TurnState>({
  initialState: newTurnState,
  evolve: (state, draft) => evolve(state, stamp(state, draft, context())),
  decide: (command, state) => asDecision(() => decide(command, state)),
});

/** The run of a turn that started; fails the test for one that has not. */
export function started(state: TurnState): RunningTurn | EndedTurn {
  if (!hasRun(state)) throw new Error(`turn ${state.turnId} has not started (${state.status})`);
  return state;
}

/** Each call of the current step and how far it got. */
export function progressOf(state: TurnState): Record<string, string> {
  const run = started(state);
  return Object.fromEntries([...run.calls.values()].filter((c) => c.step === run.step).map((c) => [c.toolCallId, c.progress]));
}

export function startCommand(limits: Partial<TurnLimits> = {}, approvals?: ApprovalPolicy): TurnCommand {
  return {
    type: 'StartTurn',
    turnId: TURN_ID,
    tenantId: 'default',
    conversationId: CONVERSATION_ID,
    prompt: 'do the thing',
    model: { provider: 'scripted', name: 'scripted', script: [] },
    limits: { ...DEFAULT_LIMITS, ...limits },
    engineId: 'engine-test',
    ...(approvals && { approvals }),
  };
}

/** Runs commands in order; returns every event and the final state. Throws on a refused command. */
export function run(commands: TurnCommand[], state: TurnState = newTurnState()): { state: TurnState; events: TurnEvent[] } {
  const events: TurnEvent[] = [];
  for (const command of commands) {
    const result = execute(state, command, context);
    state = result.state;
    events.push(...result.events);
  }
  return { state, events };
}

export const call = (step: number, i = 0, name = 'sleep'): ToolCall => ({ id: `call_${step}_${i}`, name, args: {} });
export const answerWithTools = (step: number, n = 1): TurnCommand => ({
  type: 'RecordModelAnswer',
  step,
  text: '',
  toolCalls: Array.from({ length: n }, (_, i) => call(step, i)),
});
export const answerText = (step: number, text = 'done'): TurnCommand => ({ type: 'RecordModelAnswer', step, text, toolCalls: [] });
export const toolDone = (step: number, i = 0, ok = true, fatal = !ok): TurnCommand => ({
  type: 'RecordToolResult',
  step,
  toolCallId: `call_${step}_${i}`,
  name: 'sleep',
  ok,
  ...(ok ? { output: 'slept' } : { error: { code: 'boom', message: 'boom' }, fatal }),
  durationMs: 1,
});
export const steer = (n: number, text = `steer ${n}`): TurnCommand => ({ type: 'SubmitSteer', steerId: steerId(n), text });
export const types = (events: TurnEvent[]) => events.map((e) => e.type);
export const approve = (step: number, i = 0, reason?: string): TurnCommand => ({ type: 'DecideApproval', toolCallId: `call_${step}_${i}`, decision: 'approved', by: 'user', ...(reason && { reason }) });
export const deny = (step: number, i = 0, by: 'user' | 'timeout' = 'user', reason?: string): TurnCommand => ({ type: 'DecideApproval', toolCallId: `call_${step}_${i}`, decision: 'denied', by, ...(reason && { reason }) });
/** A model answer calling `names` in order (ids call_<step>_<i>). */
export const answerCalling = (step: number, ...names: string[]): TurnCommand => ({ type: 'RecordModelAnswer', step, text: '', toolCalls: names.map((n, i) => call(step, i, n)) });
export const NEXT_TURN_ID = '0190a000-0000-7000-8000-0000000000f1';
/** A steer with its own lifecycle options (docs/design.md §2, "Steer options"). */
export const steerWith = (n: number, opts: { onTurnEnd?: 'continue' | 'drop' | 'next_turn'; expiresAt?: string }, text = `steer ${n}`): TurnCommand => ({ type: 'SubmitSteer', steerId: steerId(n), text, ...opts });
/** A text-only answer, with the follow-up turn id the runner always offers. */
export const answerEnd = (step: number, text = 'done'): TurnCommand => ({ type: 'RecordModelAnswer', step, text, toolCalls: [], nextTurnId: NEXT_TURN_ID });

/** The error a refused command threw; fails when the command was accepted. */
export function refusal(fn: () => unknown): SteerlineError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SteerlineError) return err;
    throw err;
  }
  throw new Error('expected the command to be refused');
}

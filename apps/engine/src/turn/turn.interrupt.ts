import type { ApprovalDecider, Usage } from '@steerline/contracts';
import type { TurnEventDraft } from './turn.decider';
import { stepCalls, type RunningTurn } from './turn.state';

/*
 * What an urgent steer cuts (docs/design.md §2, "Urgency"). Pure, like the
 * rest of the decider: the shell says what the streamed answer had written and
 * which tools must be waited for; the boundary `interrupt` is the decider's.
 */

/** The facts of the moment an interrupt is decided, as the shell knows them. */
export interface CutFacts {
  partialText?: string;
  usage?: Usage;
  /** Names of tools that declare themselves non-interruptible: their running calls are waited for. */
  uninterruptible: readonly string[];
  elapsedMs?: Readonly<Record<string, number>>;
}

export const INTERRUPTED_CALL_MESSAGE = 'the call was interrupted by a steer; it may or may not have taken effect';

/**
 * Cuts the step: an answer being written ends `ModelInterrupted` (never a
 * ModelResponded); each unfinished call of a tool step gets one result, an
 * `interrupted` error, or a `denied` one (by the engine, reason `interrupted`)
 * for a call still waiting for a person — except the running calls of tools
 * in `uninterruptible`, which the steer waits for (`waitingFor`).
 */
export function cutStep(state: RunningTurn, facts: CutFacts): { drafts: TurnEventDraft[]; waitingFor: string[] } {
  const { step } = state;
  if (state.awaiting === 'model') {
    const { partialText = '', usage } = facts;
    return { drafts: [{ type: 'ModelInterrupted', data: { step, partialText, ...(usage && { usage }) } }], waitingFor: [] };
  }
  if (state.awaiting !== 'tools') return { drafts: [], waitingFor: [] };
  const drafts: TurnEventDraft[] = [];
  const waitingFor: string[] = [];
  for (const call of stepCalls(state)) {
    const { toolCallId, name, approval } = call;
    if (call.progress === 'finished') continue;
    if (approval?.status === 'pending') {
      // A steer never approves anything (I7): the engine denies, and says why.
      drafts.push({ type: 'ToolApprovalDecided', data: { step, toolCallId, decision: 'denied', reason: 'interrupted', by: 'cancel' } });
      drafts.push(deniedResult(step, toolCallId, name, 'cancel', 'interrupted'));
    } else if (call.progress === 'started' && facts.uninterruptible.includes(name)) {
      waitingFor.push(toolCallId);
    } else {
      drafts.push(interruptedResult(step, toolCallId, name, facts.elapsedMs?.[toolCallId] ?? 0));
    }
  }
  return { drafts, waitingFor };
}

/** The running calls an urgent steer queued behind another one waits for: what the first cut left running. */
export function stillRunning(state: RunningTurn): string[] {
  if (state.awaiting !== 'tools') return [];
  return stepCalls(state)
    .filter((c) => c.progress === 'started')
    .map((c) => c.toolCallId);
}

function interruptedResult(step: number, toolCallId: string, name: string, durationMs: number): TurnEventDraft {
  return { type: 'ToolCallFinished', data: { step, toolCallId, name, ok: false, error: { code: 'interrupted', message: INTERRUPTED_CALL_MESSAGE }, durationMs } };
}

/** The result a denied call finishes with: the model reads it as the tool's error. */
export function deniedResult(step: number, toolCallId: string, name: string, by: ApprovalDecider, reason?: string): TurnEventDraft {
  const message =
    by === 'timeout'
      ? 'the call was denied: nobody decided in time'
      : by === 'cancel'
        ? reason === 'interrupted'
          ? 'the call was denied: a steer interrupted the step before anyone decided'
          : 'the call was denied: the turn was being ended'
        : `the call was denied by the user${reason ? `: ${reason}` : ''}`;
  return { type: 'ToolCallFinished', data: { step, toolCallId, name, ok: false, error: { code: 'denied', message }, durationMs: 0 } };
}


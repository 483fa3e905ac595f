import { SteerlineError } from '@steerline/contracts';
import type { Refusal } from '../conversation/conversation.decider';
import { StaleWriterError } from '../log/event-log';
import type { Decided } from './conversation.lines';

/** The events of an accepted decision; a refusal is thrown as the typed error it names. */
export function accepted(decided: Decided): Extract<Decided, { ok: true }>['events'] {
  if (!decided.ok) throw refusalError(decided.refusal);
  return decided.events;
}

export function refusalError(refusal: Refusal): SteerlineError {
  return new SteerlineError(refusal.code === 'claim_stale' ? 'internal' : refusal.code, refusal.message, refusal.details);
}

/** A failure that is not already a typed answer: the log (or another dependency) is away. */
export function asUnavailable(err: unknown): SteerlineError {
  return err instanceof SteerlineError ? err : new SteerlineError('unavailable', (err as Error).message);
}

/** The log refused an append because another writer came first: this engine no longer writes the conversation. */
export function takenOver(err: unknown): boolean {
  return err instanceof StaleWriterError || (err as Error | undefined)?.cause instanceof StaleWriterError || (err instanceof SteerlineError && err.code === 'turn_already_running');
}

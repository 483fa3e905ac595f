import { SteerlineError } from '@steerline/contracts';

/** A decision: the events a command produces, or why it was refused (nothing is appended then). */
export type Decision<Event> = { ok: true; events: Event[] } | { ok: false; refusal: { code: string; message: string; details?: Record<string, unknown> } };

/** What a specification needs of a decider: its start, how a given fact changes the state, and its decision. */
export interface SpecifiedDecider<Command, Event, State, Decided extends Event = Event> {
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  decide: (command: Command, state: State) => Decision<Decided>;
}

/** The expectation that a command is refused with `code` (and details that include `details`). */
export interface Refused {
  refused: string;
  details?: Record<string, unknown>;
}
export const refused = (code: string, details?: Record<string, unknown>): Refused => ({ refused: code, ...(details && { details }) });

/**
 * `given(events).when(command).then(events | refused(code))`, the shape of
 * Emmett's `DeciderSpecification`: the facts so far, one command, and what the
 * decider decides — the events it appends, in order, or its refusal.
 */
export function specification<Command, Event, State, Decided extends Event = Event>(decider: SpecifiedDecider<Command, Event, State, Decided>) {
  return (given: Event[] = []) => ({
    when: (command: Command) => {
      const decide = () => decider.decide(command, given.reduce(decider.evolve, decider.initialState()));
      return {
        then(expected: Decided[] | Refused): void {
          const decision = decide();
          if (Array.isArray(expected)) {
            if (!decision.ok) throw new Error(`expected events, the command was refused: ${decision.refusal.code} (${decision.refusal.message})`);
            expect(decision.events).toEqual(expected);
            return;
          }
          if (decision.ok) throw new Error(`expected the refusal ${expected.refused}, the command was decided: ${JSON.stringify(decision.events)}`);
          expect(decision.refusal.code).toBe(expected.refused);
          if (expected.details) expect(decision.refusal.details).toMatchObject(expected.details);
        },
        /** The decided events, for what `then` cannot say in one list. */
        events(): Decided[] {
          const decision = decide();
          if (!decision.ok) throw new Error(`the command was refused: ${decision.refusal.code} (${decision.refusal.message})`);
          return decision.events;
        },
      };
    },
  });
}

/** A decider that throws a `SteerlineError` to refuse (the turn's), as a `Decision`. */
export function asDecision<Event>(decide: () => Event[]): Decision<Event> {
  try {
    return { ok: true, events: decide() };
  } catch (err) {
    if (!(err instanceof SteerlineError)) throw err;
    return { ok: false, refusal: { code: err.code, message: err.message, ...(err.details && { details: err.details as Record<string, unknown> }) } };
  }
}

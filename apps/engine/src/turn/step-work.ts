/**
 * What a turn's runner has in flight right now — the model stream of a step,
 * the running tool calls — each with its own abort, so that an interrupt
 * (docs/design.md §2, "Urgency") stops exactly what the decider cut and
 * nothing else. Every signal also follows the turn's own (cancel, hand-over):
 * the turn's abort aborts what is in flight then, with its reason, and work
 * begun after it starts aborted. (Not `AbortSignal.any` per step and call: its
 * weak references and their finalization were ~8 % of the engine's CPU at
 * full speed.)
 */
export class StepWork {
  private stream?: { step: number; controller: AbortController; text: string; cut: boolean };
  private readonly calls = new Map<string, { controller: AbortController; startedAt: number }>();

  /**
   * The turn's abort reaches what is in flight through one listener, not a combined signal per
   * step and call: `AbortSignal.any` keeps a set and a map per signal it makes, ~1 KiB of every
   * running turn's memory.
   */
  constructor(private readonly turn: AbortSignal) {
    turn.addEventListener(
      'abort',
      () => {
        this.stream?.controller.abort(turn.reason);
        for (const { controller } of this.calls.values()) controller.abort(turn.reason);
      },
      { once: true },
    );
  }

  /** A controller for new work, aborted at once if the turn already is. */
  private controller(): AbortController {
    const controller = new AbortController();
    if (this.turn.aborted) controller.abort(this.turn.reason);
    return controller;
  }

  /** A model call of `step`: its signal, and the delta hook that keeps what it wrote (and stops forwarding once it is cut). */
  model(step: number, forward?: (text: string) => void): { signal: AbortSignal; onDelta: (text: string) => void } {
    const stream = { step, controller: this.controller(), text: '', cut: false };
    this.stream = stream;
    const onDelta = (text: string) => {
      if (stream.cut) return;
      stream.text += text;
      forward?.(text);
    };
    return { signal: stream.controller.signal, onDelta };
  }

  /** What the answer of `step` has written so far (nothing when no stream of that step is open). */
  written(step: number): string | undefined {
    return this.stream?.step === step ? this.stream.text : undefined;
  }

  /** The interrupt is decided: from now on the step's deltas are not the record's, so none is forwarded. */
  silence(step: number): void {
    if (this.stream?.step === step) this.stream.cut = true;
  }

  /** The cut is in the log: the stream stops. */
  abortModel(step: number): void {
    if (this.stream?.step === step) this.stream.controller.abort(new Error('interrupted by a steer'));
  }

  /** A running call's signal; `done` forgets it. */
  call(toolCallId: string): AbortSignal {
    const controller = this.controller();
    this.calls.set(toolCallId, { controller, startedAt: performance.now() });
    return controller.signal;
  }

  done(toolCallId: string): void {
    this.calls.delete(toolCallId);
  }

  /** The call's result is in the log already (an interrupt decided it): the tool is told to stop (a remote cancel, MCP notifications/cancelled). */
  abortCall(toolCallId: string): void {
    this.calls.get(toolCallId)?.controller.abort(new Error('interrupted by a steer'));
  }

  /** How long each running call has run, in ms. */
  elapsed(): Record<string, number> {
    const now = performance.now();
    return Object.fromEntries([...this.calls].map(([id, c]) => [id, Math.round(now - c.startedAt)]));
  }
}

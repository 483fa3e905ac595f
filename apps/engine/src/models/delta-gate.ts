/**
 * Hands a model's streamed text on as live deltas (docs/design.md §11) across the
 * attempts of one model call. A stream that breaks is retried as a whole
 * answer: what the new attempt writes again is not sent twice, so the deltas
 * of a step joined stay its recorded text. Should a retried answer differ
 * from what was already sent, the step's deltas stop there (a live view is
 * not a fact; the whole text arrives with ModelResponded).
 */
export class DeltaGate {
  private sent = '';
  private attempt = '';
  private diverged = false;

  constructor(private readonly onDelta: ((text: string) => void) | undefined) {}

  /** A new attempt starts from nothing. */
  restart(): void {
    this.attempt = '';
  }

  push(text: string): void {
    if (!this.onDelta || text === '') return;
    this.attempt += text;
    if (this.diverged) return;
    if (this.attempt.length <= this.sent.length) {
      if (!this.sent.startsWith(this.attempt)) this.diverged = true;
      return;
    }
    if (!this.attempt.startsWith(this.sent)) {
      this.diverged = true;
      return;
    }
    const fresh = this.attempt.slice(this.sent.length);
    this.sent = this.attempt;
    this.onDelta(fresh);
  }
}

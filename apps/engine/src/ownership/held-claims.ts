import type { OwnedTurn, TurnOwnership } from './turn-ownership';

/**
 * The claims this engine holds and acts on (docs/design.md §8.4). A running
 * turn's claim is held while it runs here; an ended turn's claim is held until
 * the turn after it has started (or none waits), so that an engine killed in
 * between leaves a claim the reaper finds. A claim dropped without being
 * released is an orphan for the reaper, this engine's own included.
 */
export class HeldClaims {
  private readonly held = new Map<string, { conversationId: string; ended: boolean }>();

  constructor(
    private readonly ownership: TurnOwnership,
    private readonly onReleaseFailed: (turnId: string, err: Error) => void,
  ) {}

  has(turnId: string): boolean {
    return this.held.has(turnId);
  }

  async claim(turn: Omit<OwnedTurn, 'engineId'>): Promise<void> {
    await this.ownership.claim(turn);
    this.held.set(turn.turnId, { conversationId: turn.conversationId, ended: false });
  }

  /** The turn ended here: its claim now waits for the turn after it. */
  ended(turnId: string): void {
    const claim = this.held.get(turnId);
    if (claim) claim.ended = true;
  }

  /** Stops acting on the turn and keeps its claim: the reaper settles the turn from the log. */
  drop(turnId: string): void {
    this.held.delete(turnId);
  }

  /** Stops acting on the turn and deletes its claim. */
  async release(turnId: string): Promise<void> {
    this.held.delete(turnId);
    await this.ownership.release(turnId).catch((err: Error) => this.onReleaseFailed(turnId, err));
  }

  /** Nothing waits for the conversation's ended turns any more: their claims go. */
  releaseEnded(conversationId: string): void {
    for (const [turnId, claim] of this.held) if (claim.conversationId === conversationId && claim.ended) void this.release(turnId);
  }
}

import type { OwnedTurn, TurnOwnership } from './turn-ownership';

/**
 * The claims this engine holds and acts on (docs/design.md §10). A running
 * turn's claim is held while it runs here; an ended turn's claim is held until
 * the turn after it has started (or none waits), so that an engine killed in
 * between leaves a claim the reaper finds. A claim dropped without being
 * released is an orphan for the reaper, this engine's own included.
 */
export class HeldClaims {
  private readonly held = new Map<string, { conversationId: string; ended: boolean }>();
  /** The turns of `held` whose claims wait for the turn after them, by conversation: releasing them looks at those only, not at every claim. */
  private readonly endedByConversation = new Map<string, Set<string>>();

  constructor(
    private readonly ownership: TurnOwnership,
    private readonly onReleaseFailed: (turnId: string, err: Error) => void,
  ) {}

  has(turnId: string): boolean {
    return this.held.has(turnId);
  }

  async claim(turn: Omit<OwnedTurn, 'engineId'>): Promise<void> {
    await this.ownership.claim(turn);
    this.forget(turn.turnId);
    this.held.set(turn.turnId, { conversationId: turn.conversationId, ended: false });
  }

  /** The turn ended here: its claim now waits for the turn after it. */
  ended(turnId: string): void {
    const claim = this.held.get(turnId);
    if (!claim || claim.ended) return;
    claim.ended = true;
    const ended = this.endedByConversation.get(claim.conversationId);
    if (ended) ended.add(turnId);
    else this.endedByConversation.set(claim.conversationId, new Set([turnId]));
  }

  /** Stops acting on the turn and keeps its claim: the reaper settles the turn from the log. */
  drop(turnId: string): void {
    this.forget(turnId);
  }

  /** Stops acting on the turn and deletes its claim. */
  async release(turnId: string): Promise<void> {
    this.forget(turnId);
    await this.ownership.release(turnId).catch((err: Error) => this.onReleaseFailed(turnId, err));
  }

  /** Nothing waits for the conversation's ended turns any more: their claims go. */
  releaseEnded(conversationId: string): void {
    const ended = this.endedByConversation.get(conversationId);
    if (ended) for (const turnId of [...ended]) void this.release(turnId);
  }

  private forget(turnId: string): void {
    const claim = this.held.get(turnId);
    if (!claim) return;
    this.held.delete(turnId);
    const ended = this.endedByConversation.get(claim.conversationId);
    if (ended?.delete(turnId) && ended.size === 0) this.endedByConversation.delete(claim.conversationId);
  }
}

/** Turns remembered; the oldest are forgotten first, so memory stays bounded. */
const REMEMBERED = 10_000;

/**
 * Which conversation a turn belongs to, as this gateway has learnt it (a
 * conversation's steer answers with its turn; the read model knows older
 * turns). A turn never changes conversation, so an entry never goes stale.
 */
export class TurnConversations {
  private readonly known = new Map<string, string>();

  get(tenantId: string, turnId: string): string | undefined {
    const key = keyOf(tenantId, turnId);
    const conversationId = this.known.get(key);
    if (conversationId !== undefined) {
      // Most recently used last, so the busy turns stay.
      this.known.delete(key);
      this.known.set(key, conversationId);
    }
    return conversationId;
  }

  remember(tenantId: string, turnId: string, conversationId: string): void {
    const key = keyOf(tenantId, turnId);
    this.known.delete(key);
    this.known.set(key, conversationId);
    if (this.known.size > REMEMBERED) this.known.delete(this.known.keys().next().value!);
  }
}

function keyOf(tenantId: string, turnId: string): string {
  return `${tenantId}.${turnId.toLowerCase()}`;
}

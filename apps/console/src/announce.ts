import type { Timeline } from './timeline';

/** What was announced already: steer id or tool call id → the state last said. */
export interface Announcer {
  seen: Map<string, string>;
}

/**
 * Sentences for a screen reader about what changed since the last call: a
 * steer's receipt (queued → delivered / dropped) and an approval asked for.
 * The first call after a conversation opens records the replayed history
 * without saying it, except approvals still waiting.
 */
export function announcementsFor(a: Announcer, t: Timeline): string[] {
  const quiet = !a.seen.has('#primed');
  const out: string[] = [];
  for (const turn of t.turns) {
    for (const s of Object.values(turn.steers)) {
      const state = s.status === 'queued' ? `queued at position ${s.position}` : s.status === 'delivered' ? `delivered at step ${s.step}` : `dropped: ${s.reason}`;
      if (a.seen.get(s.steerId) !== state && !quiet) out.push(`Steer ${s.position} ${state}.`);
      a.seen.set(s.steerId, state);
    }
    for (const c of Object.values(turn.tools)) {
      if (c.state === 'awaiting_approval' && a.seen.get(c.toolCallId) !== 'approval') out.push(`Approval needed: ${c.name}.`);
      a.seen.set(c.toolCallId, c.state === 'awaiting_approval' ? 'approval' : c.state);
    }
  }
  if (t.turns.length) a.seen.set('#primed', '');
  return out;
}

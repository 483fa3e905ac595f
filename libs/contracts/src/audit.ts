import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { checkInvariants, type Violation } from './invariants';
import { readSubject } from './nats';
import type { Subjects } from './subjects';

export interface AuditReport {
  events: number;
  turns: number;
  steers: number;
  violations: Violation[];
}

/**
 * Reads the log (all of it, or one conversation) and checks I1–I6 on it.
 * With `requireSettled`, a turn still running counts as a violation.
 */
export async function auditLog(
  js: JetStreamClient,
  jsm: JetStreamManager,
  s: Subjects,
  opts: { tenantId?: string; conversationId?: string; requireSettled?: boolean } = {},
): Promise<AuditReport> {
  const subject = opts.conversationId ? s.conversationEvents(opts.tenantId ?? 'default', opts.conversationId) : s.events;
  const log = await readSubject(js, jsm, s.stream, subject);
  const turns = new Set(log.map((e) => e.event.turnId).filter(Boolean));
  return {
    events: log.length,
    turns: turns.size,
    steers: log.filter((e) => e.event.type === 'SteerQueued').length,
    violations: checkInvariants(log, { requireSettled: opts.requireSettled }),
  };
}

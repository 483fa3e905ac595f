import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { InvariantChecker, type Subjects, type Violation } from '@steerline/contracts';
import { streamSubject } from './nats';

export interface AuditReport {
  events: number;
  turns: number;
  steers: number;
  violations: Violation[];
}

export interface AuditLogOptions {
  tenantId?: string;
  conversationId?: string;
  requireSettled?: boolean;
  /** Called for every message read: its stream sequence and the last one the audit reads up to. */
  onProgress?: (seq: number, lastSeq: number) => void;
}

/**
 * Reads the log (all of it, or one conversation) and checks I1–I6 on it as it
 * streams past: memory grows with the number of turns, not with the events.
 * With `requireSettled`, a turn still running counts as a violation.
 */
export async function auditLog(js: JetStreamClient, jsm: JetStreamManager, s: Subjects, opts: AuditLogOptions = {}): Promise<AuditReport> {
  // A conversation's events are on its unpartitioned subject, then (once the engines write partition
  // tokens) on a partitioned one: read in that order, they are in stream order. A walk anyway, so any token.
  const subjects = opts.conversationId ? s.conversationEventForms(opts.tenantId ?? 'default', opts.conversationId) : [s.events];
  const checker = new InvariantChecker({ requireSettled: opts.requireSettled });
  for (const subject of subjects) {
    // A deep read-ahead: the checker is fast, so the fetches are what an audit waits on.
    for await (const e of streamSubject(js, jsm, s.stream, subject, { bufferMessages: 4_096, onMessage: opts.onProgress })) checker.add(e);
  }
  const violations = checker.finish();
  return { events: checker.events, turns: checker.turns, steers: checker.steers, violations };
}

import type { JsMsg } from '@nats-io/jetstream';
import type { EntityManager } from 'typeorm';
import { decodeEvent, parseEventSubject, type SteerlineEvent } from '@steerline/contracts';
import type { StallRow } from '../read-models/rows';
import { applyEvent, type ApplyOutcome } from '../read-models/working-set';
import { loadWorkingSet, lockCheckpoint, saveWorkingSet } from '../read-models/store';
import type { DeadLetters, RejectedMessage, RejectReason } from './dead-letters';

/** A message as fetched from the stream, before decoding. */
export interface LogMessage {
  streamSeq: number;
  subject: string;
  /** When the stream stored it (ISO 8601). */
  loggedAt: string;
  data: Uint8Array;
}

export interface BatchOutcome {
  /** The checkpoint after the batch: the highest stream sequence it covers. */
  checkpoint: number;
  /** Messages at or below the stored checkpoint: redeliveries, left alone. */
  redelivered: number;
  applied: number;
  duplicates: number;
  /** Dead-lettered: undecodable, orphaned, or parked behind a stall. */
  rejected: number;
  /** The same, by reason. */
  rejectedBy: Partial<Record<RejectReason, number>>;
  /** Conversations this batch stalled. */
  stalls: StallRow[];
}

/** A fetched batch, decoded outside the transaction so the transaction holds its locks only for I/O. */
export interface DecodedBatch {
  messages: LogMessage[];
  /** One entry per message, in the same order. */
  decoded: ({ event: SteerlineEvent } | RejectedMessage)[];
  /**
   * The highest stream sequence the batch covers: past its own messages when a
   * partition read other partitions' events after them (its checkpoint moves over those too).
   */
  lastSeq: number;
}

/** `loggedAt` is read only for a dead letter: made when asked (a `Date` and its ISO string per event otherwise). */
export function toLogMessage(m: JsMsg): LogMessage {
  return {
    streamSeq: m.seq,
    subject: m.subject,
    get loggedAt() {
      return m.timestamp;
    },
    data: m.data,
  };
}

export function decodeBatch(messages: LogMessage[], lastSeq = 0): DecodedBatch {
  return { messages, decoded: messages.map(decodeLogMessage), lastSeq: Math.max(lastSeq, ...messages.map((m) => m.streamSeq)) };
}

/**
 * Applies one batch inside the caller's transaction: read and lock the
 * checkpoint, apply every newer event to the rows it touches, write the rows and
 * the new checkpoint together. Either all of it commits or none of it does.
 * `checkpointNames`: the partition's own checkpoint, or all of a generation's
 * when one batch covers every partition (a rebuild); each is set to the batch's end.
 */
export async function projectBatch(db: EntityManager, checkpointNames: readonly string[], batch: DecodedBatch, deadLetters: DeadLetters): Promise<BatchOutcome> {
  const stored = await lockCheckpoint(db, checkpointNames);
  const events: { message: LogMessage; event: SteerlineEvent }[] = [];
  const rejected: RejectedMessage[] = [];
  let redelivered = 0;
  batch.messages.forEach((message, i) => {
    const result = batch.decoded[i];
    if (message.streamSeq <= stored) redelivered += 1;
    else if ('event' in result) events.push({ message, event: result.event });
    else rejected.push(result);
  });
  // A consumer delivers in stream order; sorting only guards the invariant the rows depend on.
  events.sort((a, b) => a.message.streamSeq - b.message.streamSeq);

  const ws = await loadWorkingSet(db, events.map((d) => d.event));
  const counts: Record<ApplyOutcome, number> = { applied: 0, duplicate: 0, orphan: 0, gap: 0, stalled: 0 };
  const stalls: StallRow[] = [];
  for (const { message, event } of events) {
    const outcome = applyEvent(ws, event);
    counts[outcome] += 1;
    if (outcome === 'orphan') {
      rejected.push({ ...message, reason: 'orphan', message: `${event.type} ${event.id} names a turn, steer or conversation of someone else` });
    } else if (outcome === 'gap') {
      const stall = ws.stalled.get(event.conversationId)!;
      stalls.push(stall);
      rejected.push({ ...message, reason: 'seq_gap', message: `${event.type} ${event.id} of turn ${event.turnId} has seq ${stall.foundSeq}; expected ${stall.expectedSeq}` });
    } else if (outcome === 'stalled') {
      rejected.push({ ...message, reason: 'conversation_stalled', message: `${event.type} ${event.id} parked: conversation ${event.conversationId} is stalled` });
    }
  }
  const checkpoint = Math.max(stored, batch.lastSeq);
  await saveWorkingSet(db, ws, checkpoint > stored ? checkpointNames.map((name) => ({ name, streamSeq: checkpoint })) : []);
  await deadLetters.record(db, rejected);
  const rejectedBy: BatchOutcome['rejectedBy'] = {};
  for (const r of rejected) rejectedBy[r.reason] = (rejectedBy[r.reason] ?? 0) + 1;
  return { checkpoint, redelivered, applied: counts.applied, duplicates: counts.duplicate, rejected: rejected.length, rejectedBy, stalls };
}

/** Decodes one message and checks it was appended where its envelope says it belongs. */
export function decodeLogMessage(message: LogMessage): { event: SteerlineEvent } | RejectedMessage {
  const decoded = decodeEvent(message.data);
  if (!decoded.ok) return { ...message, reason: decoded.reason, message: decoded.message };
  const where = parseEventSubject(message.subject);
  const { event } = decoded;
  if (!where || where.tenantId !== event.tenantId || where.conversationId !== event.conversationId) {
    return { ...message, reason: 'subject_mismatch', message: `${event.type} ${event.id} of ${event.tenantId}/${event.conversationId} was appended to ${message.subject}` };
  }
  return { event };
}

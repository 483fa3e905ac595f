import { Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { parseEventSubject, type DecodeFailure } from '@steerline/contracts';
import { insertRows, type Columns } from '../read-models/store';

/**
 * - decode failures: not JSON, an unknown type or version, a schema failure;
 * - `subject_mismatch`: appended to another conversation's subject than its envelope names;
 * - `orphan`: names a turn, steer or conversation that belongs to someone else;
 * - `seq_gap`: its turn's seq skipped one, so its conversation stalls here;
 * - `conversation_stalled`: parked behind an earlier `seq_gap` of its conversation.
 */
export type RejectReason = DecodeFailure['reason'] | 'subject_mismatch' | 'orphan' | 'seq_gap' | 'conversation_stalled';

/** A log message the projector could not apply. It still advances the checkpoint: it is kept here instead. */
export interface RejectedMessage {
  streamSeq: number;
  subject: string;
  /** When the stream stored the message (ISO 8601). */
  loggedAt: string;
  reason: RejectReason;
  message: string;
  data: Uint8Array;
}

/**
 * Where rejected messages go. `record` runs inside the batch's transaction, so
 * the rows commit with the checkpoint that moves past them and nothing is lost
 * between the two.
 */
export interface DeadLetters {
  record(db: EntityManager, rejected: RejectedMessage[]): Promise<void>;
}

const COLUMNS: Columns = [
  ['stream_seq', 'bigint'], ['subject', 'text'], ['conversation_id', 'text'], ['reason', 'text'], ['detail', 'text'], ['payload', 'bytea'],
  ['logged_at', 'timestamptz'],
];

/** The `dead_letters` table of the generation the transaction points at; each message is logged too. */
export class TableDeadLetters implements DeadLetters {
  private readonly logger = new Logger('DeadLetters');

  async record(db: EntityManager, rejected: RejectedMessage[]): Promise<void> {
    if (rejected.length === 0) return;
    const rows = rejected.map((r) => [r.streamSeq, r.subject, parseEventSubject(r.subject)?.conversationId ?? null, r.reason, r.message, Buffer.from(r.data), r.loggedAt]);
    // A stream sequence is rejected once; DO NOTHING keeps a replayed batch harmless all the same.
    await insertRows(db, 'dead_letters', COLUMNS, rows, 'ON CONFLICT (stream_seq) DO NOTHING');
    let parked = 0;
    for (const r of rejected) {
      // A stalled conversation parks everything that follows; one line per batch says so.
      if (r.reason === 'conversation_stalled') parked += 1;
      else this.logger.warn({ msg: 'event dead-lettered', streamSeq: r.streamSeq, subject: r.subject, reason: r.reason, detail: r.message });
    }
    if (parked) this.logger.warn({ msg: 'events of stalled conversations parked', count: parked });
  }
}

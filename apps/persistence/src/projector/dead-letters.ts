import { Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { DecodeFailure } from '@steerline/contracts';

export type RejectReason = DecodeFailure['reason'] | 'subject_mismatch' | 'orphan';

/** A log message the projector could not apply. It still advances the checkpoint. */
export interface RejectedMessage {
  streamSeq: number;
  subject: string;
  reason: RejectReason;
  message: string;
  data: Uint8Array;
}

/**
 * Where rejected messages go. `record` runs inside the batch's transaction, so
 * a durable implementation (a dead_letters table) commits with the checkpoint
 * that skips the message and nothing is lost between the two.
 */
export interface DeadLetters {
  record(db: EntityManager, rejected: RejectedMessage[]): Promise<void>;
}

/** For now rejected messages are only logged; they stay in the stream, so nothing is lost. */
export class LoggedDeadLetters implements DeadLetters {
  private readonly logger = new Logger('DeadLetters');

  async record(_db: EntityManager, rejected: RejectedMessage[]): Promise<void> {
    for (const r of rejected) {
      this.logger.warn({ msg: 'event skipped', streamSeq: r.streamSeq, subject: r.subject, reason: r.reason, detail: r.message });
    }
  }
}

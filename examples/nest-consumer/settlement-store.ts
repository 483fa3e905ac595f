import { appendFileSync, existsSync, readFileSync } from 'node:fs';

/** One line of the store: a steer's settlement and where it sits in the stream. */
export interface SettlementRecord {
  seq: number;
  type: 'SteeringDelivered' | 'SteerDropped';
  steerId: string;
  turnId: string;
  /** The drop reason, or the step it was delivered at. */
  outcome: string;
}

/**
 * The example's "database": an append-only JSON-lines file. Each line is the
 * effect and the checkpoint at once (its stream sequence), written with one
 * append — so after a crash the last line stored says exactly which event was
 * handled last, whether or not its ack reached NATS. A torn last line (a crash
 * mid-write) is ignored: its event was not handled and comes again.
 */
export class SettlementStore {
  constructor(readonly file: string) {}

  records(): SettlementRecord[] {
    if (!existsSync(this.file)) return [];
    return readFileSync(this.file, 'utf8')
      .split('\n')
      .flatMap((line) => {
        try {
          return line ? [JSON.parse(line) as SettlementRecord] : [];
        } catch {
          return [];
        }
      });
  }

  /** The checkpoint: the last stream sequence handled, undefined when none. */
  lastSeq(): number | undefined {
    const seqs = this.records().map((r) => r.seq);
    return seqs.length ? Math.max(...seqs) : undefined;
  }

  append(record: SettlementRecord): void {
    appendFileSync(this.file, `${JSON.stringify(record)}\n`);
  }
}

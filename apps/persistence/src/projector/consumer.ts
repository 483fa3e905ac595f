import { AckPolicy, DeliverPolicy, type ConsumerConfig, type ConsumerInfo, type JetStreamManager } from '@nats-io/jetstream';
import type { Subjects } from '@steerline/contracts';

const NANOS_PER_MS = 1_000_000;

/**
 * A partition's durable pull consumer (`name`: see partitionName), starting right
 * after `checkpoint`, on `filter`: the whole log (`s.events`: the partition keeps
 * its own events), or its own subjects (`s.partitionEvents(i)`, a filtered layout).
 */
export function projectorConsumerConfig(s: Subjects, name: string, checkpoint: number, filter: string = s.events): Partial<ConsumerConfig> & { durable_name: string } {
  return {
    durable_name: name,
    filter_subject: filter,
    // Batches are applied in order, so acking a batch's last message acks it all.
    ack_policy: AckPolicy.All,
    ack_wait: 60_000 * NANOS_PER_MS,
    max_ack_pending: 20_000,
    ...(checkpoint > 0 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: checkpoint + 1 } : { deliver_policy: DeliverPolicy.All }),
  };
}

/**
 * Makes the durable consumer agree with the checkpoint before fetching.
 *
 * The checkpoint in PostgreSQL is the truth. A consumer that has delivered past
 * it (a batch fetched but never committed: a crash, a failed transaction) would
 * hand the next messages out first and the uncommitted ones only after their ack
 * wait, behind a checkpoint that then skips them; so it is recreated to start
 * right after the checkpoint. The same happens when the database was emptied
 * to be rebuilt from the log. A consumer behind the checkpoint is kept: what it
 * redelivers is skipped by sequence.
 */
export async function alignConsumer(jsm: JetStreamManager, s: Subjects, name: string, checkpoint: number, filter: string = s.events): Promise<ConsumerInfo> {
  const existing = await jsm.consumers.info(s.stream, name).catch((err: unknown) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });
  if (existing && existing.delivered.stream_seq <= checkpoint && matches(existing, filter)) return existing;
  if (existing) await jsm.consumers.delete(s.stream, name);
  return jsm.consumers.add(s.stream, projectorConsumerConfig(s, name, checkpoint, filter));
}

function matches(info: ConsumerInfo, filter: string): boolean {
  return info.config.filter_subject === filter && info.config.ack_policy === AckPolicy.All && !info.config.deliver_subject;
}

function isNotFound(err: unknown): boolean {
  const code = (err as { api_error?: { err_code?: number } } | null)?.api_error?.err_code;
  return code === 10014 || /consumer not found/i.test((err as Error)?.message ?? '');
}

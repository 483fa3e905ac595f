import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Client } from 'pg';
import { subjects } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { appendAll, bigConversation } from './big-conversation';
import { median } from './stats';

export interface BigReadResult {
  messages: number;
  bytes: number;
  /** Median of full GET /v1/conversations/:cid reads, body received and parsed. */
  readMs: number;
  /** The floor: the same messages SELECTed straight from the read model's table. */
  selectMs: number;
}

const ROUNDS = 5;

/**
 * Time to read a conversation of `sizes` messages (half of them 2 KB tool results) through the
 * gateway (~10 MB at 10 000 messages), next to reading its message rows from PostgreSQL directly. The
 * conversations are built from hand-made events and projected as usual.
 */
export async function measureBigReads(opts: { gatewayUrl: string; nc: NatsConnection; prefix: string; databaseUrl: string; sizes: number[] }): Promise<BigReadResult[]> {
  const s = subjects(opts.prefix);
  const pg = new Client({ connectionString: opts.databaseUrl });
  await pg.connect();
  try {
    const out: BigReadResult[] = [];
    for (const size of opts.sizes) {
      const big = bigConversation({ messages: size, outputBytes: 2000, turns: 5 });
      const seq = await appendAll(jetstream(opts.nc), s, big.events);
      await waitForCheckpoint(opts.nc, s.queryHealth, seq);
      const url = `${opts.gatewayUrl}/v1/conversations/${big.conversationId}`;
      let bytes = 0;
      const reads: number[] = [];
      for (let i = 0; i < ROUNDS + 1; i++) {
        const t0 = performance.now();
        const text = await (await fetch(url)).text();
        const view = JSON.parse(text) as { messages: unknown[] };
        if (view.messages.length !== big.messages) throw new Error(`read ${view.messages.length} of ${big.messages} messages`);
        // The first read warms caches and code paths; it is not counted.
        if (i > 0) reads.push(performance.now() - t0);
        bytes = Buffer.byteLength(text);
      }
      const schema = (await pg.query(`SELECT g.schema_name FROM public.projection_active a JOIN public.projection_generations g ON g.id = a.generation`)).rows[0].schema_name as string;
      const selects: number[] = [];
      for (let i = 0; i < ROUNDS + 1; i++) {
        const t0 = performance.now();
        await pg.query(`SELECT * FROM "${schema}".messages WHERE conversation_id = $1 ORDER BY ordinal`, [big.conversationId]);
        if (i > 0) selects.push(performance.now() - t0);
      }
      out.push({ messages: big.messages, bytes, readMs: median(reads), selectMs: median(selects) });
    }
    return out;
  } finally {
    await pg.end();
  }
}

async function waitForCheckpoint(nc: NatsConnection, subject: string, seq: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    const health = await request<{ checkpoint: number | null }>(nc, subject, {}, { timeoutMs: 5000, noResponders: 'unavailable' }).catch(() => undefined);
    if ((health?.checkpoint ?? 0) >= seq) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the projector did not reach sequence ${seq}`);
}

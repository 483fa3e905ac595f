import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Client } from 'pg';
import { subjects } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import type { Row } from './report';
import { appendAll, bigConversation } from './big-conversation';
import { startLoadClient } from './load';
import { median } from './stats';

export interface BigReadResult {
  messages: number;
  bytes: number;
  /** Median of full GET /v1/conversations/:cid reads by the load client, the whole body received. */
  readMs: number;
  /** The same from a second gateway (`baselineUrl`, e.g. another build's), read in alternation with the first. */
  baselineMs?: number;
  /** The floor: the same messages SELECTed straight from the read model's table. */
  selectMs: number;
}

/**
 * Reads of each size per gateway, and SELECTs of the floor. A 10 005-message read spreads 180–280 ms
 * from one read to the next on a quiet host: the median of 5 read 3.8–5.3× the SELECT in three runs
 * where the median of 15, alternated with them, read 5.2–5.6× (docs/performance.md, eighth round).
 */
const ROUNDS = 15;

/**
 * Time to read a conversation of `sizes` messages (half of them 2 KB tool results) through the
 * gateway (~10 MB at 10 000 messages), next to reading its message rows from PostgreSQL directly. The
 * conversations are built from hand-made events and projected as usual.
 */
export async function measureBigReads(opts: { gatewayUrl: string; baselineUrl?: string; nc: NatsConnection; prefix: string; databaseUrl: string; sizes: number[] }): Promise<BigReadResult[]> {
  const s = subjects(opts.prefix);
  const pg = new Client({ connectionString: opts.databaseUrl });
  await pg.connect();
  const client = await startLoadClient();
  try {
    const out: BigReadResult[] = [];
    for (const size of opts.sizes) {
      const big = bigConversation({ messages: size, outputBytes: 2000, turns: 5 });
      const seq = await appendAll(jetstream(opts.nc), s, big.events);
      await waitForCheckpoint(opts.nc, s.queryHealth, seq);
      const path = `/v1/conversations/${big.conversationId}`;
      const gateways = [opts.gatewayUrl, ...(opts.baselineUrl ? [opts.baselineUrl] : [])];
      let bytes = 0;
      // Each gateway's first read is checked whole (and warms caches and code paths); it is not counted.
      for (const gateway of gateways) {
        const text = await (await fetch(`${gateway}${path}`)).text();
        const view = JSON.parse(text) as { messages: unknown[] };
        if (view.messages.length !== big.messages) throw new Error(`read ${view.messages.length} of ${big.messages} messages`);
        bytes = Buffer.byteLength(text);
      }
      const reads: number[][] = gateways.map(() => []);
      for (let i = 0; i < ROUNDS; i++) {
        for (const [g, gateway] of gateways.entries()) reads[g].push(...(await client.run({ method: 'GET', urls: [`${gateway}${path}`], clients: 1, each: 1 })).latencies);
      }
      const schema = (await pg.query(`SELECT g.schema_name FROM public.projection_active a JOIN public.projection_generations g ON g.id = a.generation`)).rows[0].schema_name as string;
      const selects: number[] = [];
      for (let i = 0; i < ROUNDS + 1; i++) {
        const t0 = performance.now();
        await pg.query(`SELECT * FROM "${schema}".messages WHERE conversation_id = $1 ORDER BY ordinal`, [big.conversationId]);
        if (i > 0) selects.push(performance.now() - t0);
      }
      out.push({ messages: big.messages, bytes, readMs: median(reads[0]), ...(reads[1] ? { baselineMs: median(reads[1]) } : {}), selectMs: median(selects) });
    }
    return out;
  } finally {
    await client.close();
    await pg.end();
  }
}

/** The rows of `measureBigReads`' figures; a 10 000-message read is held to ≤ 5× the SELECT of its rows. */
export function bigReadRows(reads: BigReadResult[]): Row[] {
  return [
    ...reads.map((r): Row => ({
      group: 'steerline',
      name: `read a ${r.messages}-message conversation (GET, ${(r.bytes / 1e6).toFixed(1)} MB body), median`,
      value: r.readMs,
      unit: 'ms',
      floor: r.selectMs,
      floorName: 'SELECT of its message rows',
      ...(r.messages >= 10_000 ? { target: '≤ 5×' } : {}),
    })),
    ...reads.map((r): Row => ({ group: 'steerline', name: `per-message cost of that read (${r.messages} messages)`, value: (r.readMs * 1000) / r.messages, unit: 'µs/msg', floor: (r.selectMs * 1000) / r.messages, floorName: 'same, SELECT' })),
    ...reads.flatMap((r): Row[] =>
      r.baselineMs === undefined ? [] : [{ group: 'steerline', name: `the same ${r.messages}-message read from the baseline gateway (BENCH_BASELINE_DIST), median`, value: r.baselineMs, unit: 'ms', floor: r.readMs, floorName: 'this build' }],
    ),
  ];
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

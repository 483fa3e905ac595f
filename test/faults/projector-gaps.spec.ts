import { Client } from 'pg';
import { DEFAULT_LIMITS, encodeEvent, messagesOf, type ConversationView, type SteerlineEvent } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startPersistence, type PersistenceApp } from '../../apps/persistence/src/app';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { createTestDatabase, openNats, uniquePrefix, NATS_URL, type NatsHandle } from '../support/env';
import { CapturingLogger, TENANT, health, publish, sampleConversation, TurnLog } from './projector-support';

/**
 * Per-turn `seq` is gapless (I1). When the projector sees it skip, it stops
 * advancing that conversation (its later events are kept as dead letters,
 * reason `conversation_stalled`) instead of writing a transcript with a hole,
 * reports it, and goes on with every other conversation.
 */
describe('a per-turn seq gap', () => {
  const prefix = uniquePrefix();
  const logger = new CapturingLogger();
  let nats: NatsHandle;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let app: PersistenceApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    nats = await openNats(prefix);
    app = await startPersistence(loadPersistenceConfig({ NATS_URL, DATABASE_URL: db.url, STEERLINE_PREFIX: prefix }), { logger });
  });

  afterAll(async () => {
    await app?.close();
    await nats?.close();
    await db?.drop();
  });

  const conversation = (conversationId: string) =>
    request<ConversationView>(nats.nc, nats.s.queryConversation, { tenantId: TENANT, conversationId }, { timeoutMs: 15_000, noResponders: 'unavailable' });

  it('stalls only its conversation, keeps the transcript before the hole, and parks everything after it', async () => {
    const broken = sampleConversation();
    const healthy = sampleConversation();
    // The ToolCallFinished of broken's first turn never reaches the log.
    const [dropped, ...afterHole] = broken.rest.slice(1);
    expect(dropped.type).toBe('ToolCallFinished');
    const beforeHole = [...broken.first, broken.rest[0]];
    await publish(nats, [...beforeHole, ...healthy.first]);
    const interleaved = healthy.rest.flatMap((e, i) => [...(afterHole[i] ? [afterHole[i]] : []), e]);
    const gapSeq = await publish(nats, interleaved.slice(0, 1));
    await app.projector.waitForSeq(await publish(nats, interleaved.slice(1)));
    // Later, in another batch: the stall is remembered, and a new conversation still projects.
    const lateTurn = new TurnLog(broken.conversationId).event('TurnStarted', { prompt: 'Try again', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, engineId: 'e' });
    const fresh = sampleConversation();
    await app.projector.waitForSeq(await publish(nats, [lateTurn, ...fresh.first, ...fresh.rest]));

    const stalled = await conversation(broken.conversationId);
    expect(stalled.messages).toEqual(beforeHole.flatMap(messagesOf));
    expect(stalled.turns.map((t) => t.status)).toEqual(['running']);
    expect(stalled.steers.map((s) => s.status)).toEqual(['queued', 'dropped']);
    for (const ok of [healthy, fresh]) {
      expect((await conversation(ok.conversationId)).messages).toEqual([...ok.first, ...ok.rest].flatMap(messagesOf));
    }

    const parked: SteerlineEvent[] = [...afterHole, lateTurn];
    expect(await health(nats)).toMatchObject({ stalledConversations: 1, deadLetters: parked.length, lag: 0 });
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      await pg.query(`SELECT set_config('search_path', schema_name, false) FROM projection_active JOIN projection_generations ON id = generation`);
      const letters = (await pg.query('SELECT stream_seq, reason, payload FROM dead_letters ORDER BY stream_seq')).rows;
      expect(Number(letters[0].stream_seq)).toBe(gapSeq);
      expect(letters.map((r) => r.reason)).toEqual(['seq_gap', ...Array(parked.length - 1).fill('conversation_stalled')]);
      // Byte for byte what was appended, so nothing is lost when the cause is fixed and the log replayed.
      expect(letters.map((r) => JSON.parse(r.payload.toString()).id)).toEqual(parked.map((e) => e.id));
      expect(letters[0].payload).toEqual(Buffer.from(encodeEvent(afterHole[0])));
      const stall = (await pg.query('SELECT * FROM stalled_conversations')).rows;
      expect(stall).toMatchObject([{ conversation_id: broken.conversationId, turn_id: dropped.turnId, event_id: afterHole[0].id, expected_seq: dropped.seq, found_seq: dropped.seq + 1 }]);
    } finally {
      await pg.end();
    }
    const reported = logger.records.filter((r) => r.level === 'error' && (r.message as { conversationId?: string }).conversationId === broken.conversationId);
    expect(reported).toHaveLength(1);
    expect(reported[0].message).toMatchObject({ turnId: dropped.turnId, expectedSeq: dropped.seq, foundSeq: dropped.seq + 1 });
  });
});

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The read models (DESIGN §1). No foreign keys: the projector is the only
 * writer and every row can be rebuilt from the log, so they would only cost
 * write throughput and force an insert order within a batch.
 */
export class InitialSchema1767225600000 implements MigrationInterface {
  name = 'InitialSchema1767225600000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE conversations (
        id uuid PRIMARY KEY,
        tenant_id text NOT NULL,
        created_at timestamptz NOT NULL,
        message_count int NOT NULL DEFAULT 0
      )`);
    await db.query(`
      CREATE TABLE turns (
        id uuid PRIMARY KEY,
        conversation_id uuid NOT NULL,
        tenant_id text NOT NULL,
        status text NOT NULL CHECK (status IN ('running', 'completed', 'cancelled', 'failed')),
        steps int NOT NULL DEFAULT 0,
        prompt text NOT NULL,
        model jsonb NOT NULL,
        limits jsonb NOT NULL,
        text text,
        error jsonb,
        cancel_reason text,
        queued int NOT NULL DEFAULT 0,
        delivered int NOT NULL DEFAULT 0,
        dropped int NOT NULL DEFAULT 0,
        started_at timestamptz NOT NULL,
        ended_at timestamptz,
        last_event_seq int NOT NULL
      )`);
    await db.query(`CREATE INDEX turns_conversation_idx ON turns (conversation_id, started_at, id)`);
    await db.query(`
      CREATE TABLE messages (
        conversation_id uuid NOT NULL,
        ordinal int NOT NULL,
        role text NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
        content text NOT NULL,
        turn_id uuid NOT NULL,
        step int,
        steer_id uuid,
        tool_call_id text,
        tool_calls jsonb,
        PRIMARY KEY (conversation_id, ordinal)
      )`);
    await db.query(`
      CREATE TABLE steers (
        id uuid PRIMARY KEY,
        turn_id uuid NOT NULL,
        conversation_id uuid NOT NULL,
        tenant_id text NOT NULL,
        text text NOT NULL,
        position int NOT NULL,
        status text NOT NULL CHECK (status IN ('queued', 'delivered', 'dropped')),
        reason text,
        step int,
        boundary text CHECK (boundary IN ('tool_results', 'turn_end')),
        request_step int,
        queued_at timestamptz NOT NULL,
        settled_at timestamptz
      )`);
    await db.query(`CREATE INDEX steers_turn_idx ON steers (turn_id, position)`);
    await db.query(`CREATE INDEX steers_conversation_idx ON steers (conversation_id)`);
    await db.query(`
      CREATE TABLE checkpoints (
        name text PRIMARY KEY,
        stream_seq bigint NOT NULL DEFAULT 0
      )`);
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ['checkpoints', 'steers', 'messages', 'turns', 'conversations']) await db.query(`DROP TABLE ${table}`);
  }
}

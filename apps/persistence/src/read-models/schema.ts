/**
 * The read-model tables of one generation, written once. Every generation
 * (the first one at start-up, each one `npm run rebuild` builds) is created
 * from this function, so a rebuild can never produce tables that differ from
 * the live ones. Migrations only own the bookkeeping in `public` that says
 * which generation is active.
 *
 * No foreign keys: the projector is the only writer and every row can be
 * rebuilt from the log, so they would only cost write throughput and force an
 * insert order within a batch.
 */

/** Bump when `generationDdl` changes: a generation built at an older version must be rebuilt (`npm run rebuild`). */
export const DDL_VERSION = 4;

/** The schema generation `id` lives in. */
export function generationSchema(id: number): string {
  return `rm_${id}`;
}

export function generationDdl(schema: string): string[] {
  const s = quoteIdentifier(schema);
  return [
    `CREATE SCHEMA ${s}`,
    `CREATE TABLE ${s}.conversations (
      id uuid PRIMARY KEY,
      tenant_id text NOT NULL,
      created_at timestamptz NOT NULL,
      message_count int NOT NULL DEFAULT 0
    )`,
    `CREATE TABLE ${s}.turns (
      id uuid PRIMARY KEY,
      conversation_id uuid NOT NULL,
      tenant_id text NOT NULL,
      status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'cancelled', 'failed')),
      steps int NOT NULL DEFAULT 0,
      prompt text NOT NULL,
      model jsonb NOT NULL,
      limits jsonb NOT NULL,
      text text,
      error jsonb,
      cancel_reason text,
      resumes int NOT NULL DEFAULT 0,
      queued int NOT NULL DEFAULT 0,
      delivered int NOT NULL DEFAULT 0,
      dropped int NOT NULL DEFAULT 0,
      pending_approvals jsonb NOT NULL DEFAULT '[]',
      started_at timestamptz NOT NULL,
      ended_at timestamptz,
      last_event_seq int NOT NULL
    )`,
    `CREATE INDEX turns_conversation_idx ON ${s}.turns (conversation_id, started_at, id)`,
    `CREATE TABLE ${s}.messages (
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
    )`,
    `CREATE TABLE ${s}.steers (
      id uuid PRIMARY KEY,
      turn_id uuid NOT NULL,
      conversation_id uuid NOT NULL,
      tenant_id text NOT NULL,
      text text NOT NULL,
      position int NOT NULL,
      status text NOT NULL CHECK (status IN ('queued', 'delivered', 'dropped')),
      reason text,
      step int,
      boundary text CHECK (boundary IN ('tool_results', 'turn_end', 'interrupt')),
      request_step int,
      next_turn_id uuid,
      queued_at timestamptz NOT NULL,
      settled_at timestamptz
    )`,
    `CREATE INDEX steers_turn_idx ON ${s}.steers (turn_id, position)`,
    `CREATE INDEX steers_conversation_idx ON ${s}.steers (conversation_id)`,
    `CREATE TABLE ${s}.checkpoints (
      name text PRIMARY KEY,
      stream_seq bigint NOT NULL DEFAULT 0
    )`,
    // Every message the projector could not apply, byte for byte. `logged_at` is when the
    // stream stored it (the same in every generation); `recorded_at` when this one rejected it.
    `CREATE TABLE ${s}.dead_letters (
      stream_seq bigint PRIMARY KEY,
      subject text NOT NULL,
      conversation_id text,
      reason text NOT NULL,
      detail text NOT NULL,
      payload bytea NOT NULL,
      logged_at timestamptz NOT NULL,
      recorded_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE INDEX dead_letters_conversation_idx ON ${s}.dead_letters (conversation_id, stream_seq)`,
    // A conversation whose transcript cannot go on: one of its turns skipped a seq.
    `CREATE TABLE ${s}.stalled_conversations (
      conversation_id uuid PRIMARY KEY,
      tenant_id text NOT NULL,
      turn_id uuid NOT NULL,
      event_id uuid NOT NULL,
      expected_seq int NOT NULL,
      found_seq int NOT NULL,
      event_at timestamptz NOT NULL
    )`,
  ];
}

export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

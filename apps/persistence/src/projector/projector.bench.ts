import { performance } from 'node:perf_hooks';
import type { EntityManager } from 'typeorm';
import { DEFAULT_LIMITS, encodeEvent, eventVersion, subjects, uuidv7, type EventData, type EventType, type SteerlineEvent } from '@steerline/contracts';
import { openReadModels } from '../migrations/database';
import { createGeneration, dropGeneration, useGeneration } from '../read-models/generations';
import { decodeBatch, projectBatch, type LogMessage } from './batch';
import type { DeadLetters } from './dead-letters';

/**
 * A benchmark hook (for `npm run bench`, not a test: nothing here asserts a
 * speed). Measures, in one run on one database, how many events per second
 * the projector's batch path applies (decode, load rows, apply, write rows and
 * checkpoint, one transaction per batch) against how many rows per second a
 * raw batched INSERT of the same payloads manages. The goal is a ratio
 * of at least 0.5. NATS is left out on both sides: this is the PostgreSQL cost.
 */
export interface ProjectorBenchRound {
  projectorEventsPerSecond: number;
  rawInsertRowsPerSecond: number;
  /**
   * The projector's CPU per event (µs): this process's and its PostgreSQL backends', while it
   * applied the round. Wall time per event may be less than their sum (the next batch is decoded
   * while PostgreSQL commits the last, on the other core) or more (waits). Given when `cpuMs` was.
   */
  projectorCpuUsPerEvent?: number;
}

/**
 * One round per entry, each on fresh events, the raw INSERT and the projector
 * alternating: one round of each is too short to stand apart from a noisy
 * machine, so the caller compares medians.
 */
export async function benchProjector(opts: {
  databaseUrl: string;
  events?: number;
  batchSize?: number;
  warmupEvents?: number;
  rounds?: number;
  /** A process's CPU so far (ms), e.g. from /proc: with it, each round also gives its CPU per event. */
  cpuMs?: (pid: number) => number;
  /**
   * A log to apply instead of synthetic turns (e.g. what a live run appended, to hold its read
   * side against the batch path of the same events): every round applies it all, to empty tables.
   */
  log?: LogMessage[];
}): Promise<ProjectorBenchRound[]> {
  const batchSize = opts.batchSize ?? 500;
  const messages = opts.log ?? syntheticLog(opts.events ?? 20_000);
  const dataSource = await openReadModels(opts.databaseUrl, 'steerline-bench');
  // A generation of its own: the active read models are never touched.
  const generation = await dataSource.transaction((db) => createGeneration(db));
  const inGeneration = <T>(fn: (db: EntityManager) => Promise<T>) =>
    dataSource.transaction(async (db) => {
      await useGeneration(db, generation);
      return fn(db);
    });
  try {
    await inGeneration((db) => db.query('CREATE TABLE bench_raw (stream_seq bigint PRIMARY KEY, subject text NOT NULL, payload bytea NOT NULL)'));
    const noDeadLetters: DeadLetters = { record: async () => undefined };
    const insertRaw = async (batches: LogMessage[][]) => {
      for (const batch of batches) {
        await inGeneration((db) =>
          db.query('INSERT INTO bench_raw (stream_seq, subject, payload) SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[])', [
            batch.map((m) => m.streamSeq),
            batch.map((m) => m.subject),
            batch.map((m) => Buffer.from(m.data)),
          ]),
        );
      }
    };
    // As the projector does: the next batch is decoded while this one commits.
    const project = async (batches: LogMessage[][], checkpoint: string) => {
      let decoded = decodeBatch(batches[0]);
      for (let i = 0; i < batches.length; i++) {
        const batch = decoded;
        const commit = inGeneration((db) => projectBatch(db, [checkpoint], batch, noDeadLetters));
        if (i + 1 < batches.length) decoded = decodeBatch(batches[i + 1]);
        await commit;
      }
    };
    const timed = async (run: () => Promise<void>) => {
      const start = performance.now();
      await run();
      return (performance.now() - start) / 1000;
    };

    // Both paths warmed up first, as in a projector that has been running: a cold one is
    // measured mostly optimising its own code.
    const warmUp = chunk(syntheticLog(opts.warmupEvents ?? 10_000), batchSize);
    await insertRaw(warmUp);
    await inGeneration((db) => db.query('TRUNCATE bench_raw'));
    await project(warmUp, 'bench-warm-up');

    // The backends serving this bench's connections (its pool opened them while warming up).
    const backends: number[] = opts.cpuMs
      ? ((await dataSource.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'steerline-bench' AND datname = current_database()")) as { pid: number }[]).map((r) => r.pid)
      : [];
    const cpu = () => {
      const own = process.cpuUsage();
      return (own.user + own.system) / 1000 + backends.reduce((t, pid) => t + opts.cpuMs!(pid), 0);
    };

    const rounds: ProjectorBenchRound[] = [];
    for (let round = 0; round < (opts.rounds ?? 3); round++) {
      const batches = chunk(round === 0 || opts.log ? messages : syntheticLog(messages.length), batchSize);
      await inGeneration((db) => db.query(`TRUNCATE bench_raw${opts.log ? ', conversations, turns, steers, messages, stalled_conversations, checkpoints' : ''}`));
      const rawInsertRowsPerSecond = messages.length / (await timed(() => insertRaw(batches)));
      const cpu0 = cpu();
      const projectorEventsPerSecond = messages.length / (await timed(() => project(batches, `bench-${round}`)));
      const projectorCpuUsPerEvent = opts.cpuMs ? ((cpu() - cpu0) * 1000) / messages.length : undefined;
      rounds.push({ projectorEventsPerSecond, rawInsertRowsPerSecond, ...(projectorCpuUsPerEvent !== undefined && { projectorCpuUsPerEvent }) });
    }
    return rounds;
  } finally {
    await dataSource.transaction((db) => dropGeneration(db, generation)).catch(() => undefined);
    await dataSource.destroy();
  }
}

/**
 * Turns with a tool call and a delivered steer, 20 conversations in flight at a
 * time so batches touch many rows, as a busy engine's log does.
 */
function syntheticLog(count: number): LogMessage[] {
  const s = subjects('bench');
  const events: SteerlineEvent[] = [];
  const at = new Date().toISOString();
  while (events.length < count) {
    const turns = Array.from({ length: 20 }, () => turnEvents(uuidv7(), uuidv7(), at));
    for (let i = 0; i < turns[0].length; i++) for (const turn of turns) events.push(turn[i]);
  }
  return events.slice(0, count).map((event, i) => ({
    streamSeq: i + 1,
    subject: s.conversationEvents(event.tenantId, event.conversationId),
    loggedAt: at,
    data: encodeEvent(event),
  }));
}

function turnEvents(conversationId: string, turnId: string, at: string): SteerlineEvent[] {
  let seq = 0;
  const event = <T extends Exclude<EventType, 'ConversationCreated'>>(type: T, data: EventData<T>) =>
    ({ id: uuidv7(), type, version: eventVersion(type), tenantId: 'bench', conversationId, turnId, seq: ++seq, at, data }) as unknown as SteerlineEvent;
  const steerId = uuidv7();
  const call = { id: 'call_1_0', name: 'echo', args: { text: 'hello' } };
  return [
    event('TurnStarted', { prompt: 'Benchmark the projector', model: { provider: 'scripted', name: 'scripted', script: [] }, limits: DEFAULT_LIMITS, engineId: 'bench' }),
    event('ModelRequested', { step: 1, steerIds: [] }),
    event('ModelResponded', { step: 1, text: 'calling echo', toolCalls: [call] }),
    event('ToolCallStarted', { step: 1, toolCallId: call.id, name: call.name, args: call.args }),
    event('SteerQueued', { steerId, text: 'be brief', position: 1, queueDepth: 1 }),
    event('ToolCallFinished', { step: 1, toolCallId: call.id, name: call.name, ok: true, output: 'hello', durationMs: 1 }),
    event('SteeringDelivered', { steerId, text: 'be brief', position: 1, step: 1, boundary: 'tool_results', requestStep: 2, afterToolCallIds: [call.id], rendered: 'be brief' }),
    event('ModelRequested', { step: 2, steerIds: [steerId] }),
    event('ModelResponded', { step: 2, text: 'Acknowledged: be brief\nhello', toolCalls: [] }),
    event('TurnCompleted', { steps: 2, text: 'Acknowledged: be brief\nhello' }),
  ];
}

function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

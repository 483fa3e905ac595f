import { isTerminalTurnEvent } from '@steerline/contracts';
import { auditLog, type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { percentile, pool } from '../../scripts/bench/stats';
import { startStack, steerSafely, type Stack } from '../support/stack';

const TURNS = Number(process.env.STEERLINE_LOAD_TURNS ?? 200);
const STEERS_PER_TURN = Number(process.env.STEERLINE_LOAD_STEERS ?? 10);
const CONCURRENCY = 64;

// A seeded generator: a failing run can be replayed with the same choices.
function random(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

describe('load: hundreds of concurrent turns, thousands of steers, random withdraws and cancels', () => {
  let stack: Stack;
  beforeAll(async () => {
    // The per-key rate limit is for clients; this test is the load.
    stack = await startStack({ env: { STEERLINE_RATE_LIMIT: '0' } });
  });
  afterAll(async () => {
    await stack.close();
  });

  it('ends with a clean audit and read models equal to the log', async () => {
    const rand = random(Number(process.env.STEERLINE_LOAD_SEED ?? 42));
    const started = Date.now();
    const turns = await pool(
      Array.from({ length: TURNS }, () => async () => {
        const cid = (await stack.api('POST', '/conversations')).body.id as string;
        const script = [
          // Long enough that most steers land mid-turn; some turns end while steers still arrive.
          { tool: { name: 'sleep', args: { ms: 2000 + Math.floor(rand() * 4000) } } },
          { tool: { name: 'sleep', args: { ms: 500 + Math.floor(rand() * 3000) } } },
          { text: 'done' },
        ];
        const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'load', model: { provider: 'scripted', script }, limits: { maxQueued: 20 } });
        expect(res.status).toBe(202);
        return { cid, tid: res.body.turnId as string };
      }),
      CONCURRENCY,
    );

    const latencies: number[] = [];
    const outcomes = { accepted: 0, refused: 0, withdrawn: 0, cancelled: 0 };
    const steerStart = Date.now();
    const tasks = turns.flatMap(({ tid }) => {
        const cancelThisTurn = rand() < 0.1;
        return Array.from({ length: STEERS_PER_TURN }, (_, i) => async () => {
          const t0 = performance.now();
          const { res } = await steerSafely(stack, tid, `steer ${i}`);
          latencies.push(performance.now() - t0);
          if (res.status === 202 || res.status === 200) outcomes.accepted++;
          else {
            expect([409, 429]).toContain(res.status);
            outcomes.refused++;
            return;
          }
          if (rand() < 0.1) {
            const w = await stack.api('DELETE', `/turns/${tid}/steers/${res.body.steerId}`);
            if (w.status === 200) outcomes.withdrawn++;
          }
          if (cancelThisTurn && i === STEERS_PER_TURN - 1) {
            const c = await stack.api('POST', `/turns/${tid}/cancel`, {});
            if (c.status === 202) outcomes.cancelled++;
          }
        });
      });
    // Interleaved across turns, as many clients would send them.
    for (let i = tasks.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [tasks[i], tasks[j]] = [tasks[j], tasks[i]];
    }
    await pool(tasks, CONCURRENCY);
    const steerSeconds = (Date.now() - steerStart) / 1000;

    const tids = new Set(turns.map((t) => t.tid));
    const log: StoredEvent[] = await eventually(async () => {
      const all = await stack.nats.readAll();
      const ended = all.filter((e) => isTerminalTurnEvent(e.event) && tids.has(e.event.turnId!));
      return ended.length === TURNS ? all : undefined;
    }, 60_000, 'every turn to end');

    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);

    // The read models equal the log: every steer's status, per conversation.
    await stack.settled();
    const fromLog = new Map<string, string>();
    for (const { event } of log) {
      if (event.type === 'SteerQueued') fromLog.set(event.data.steerId, 'queued');
      if (event.type === 'SteeringDelivered') fromLog.set(event.data.steerId, 'delivered');
      if (event.type === 'SteerDropped') fromLog.set(event.data.steerId, 'dropped');
    }
    const fromReadModel = new Map<string, string>();
    await pool(turns.map(({ cid }) => async () => {
      const view = await stack.api('GET', `/conversations/${cid}`);
      for (const s of view.body.steers) fromReadModel.set(s.id, s.status);
    }), 16);
    expect(fromReadModel).toEqual(fromLog);
    expect(fromLog.size).toBe(outcomes.accepted);

    console.log(
      [
        `load: ${TURNS} turns, ${TURNS * STEERS_PER_TURN} steers sent in ${steerSeconds.toFixed(1)} s (${((TURNS * STEERS_PER_TURN) / steerSeconds).toFixed(0)} steers/s)`,
        `  accepted ${outcomes.accepted}, refused ${outcomes.refused}, withdrawn ${outcomes.withdrawn}, turns cancelled ${outcomes.cancelled}`,
        `  steer receipt latency p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`,
        `  ${log.length} events audited, 0 violations; total ${((Date.now() - started) / 1000).toFixed(1)} s`,
      ].join('\n'),
    );
  });
});

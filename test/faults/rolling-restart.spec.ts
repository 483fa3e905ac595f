import { randomUUID } from 'node:crypto';
import { checkInvariants, isTerminalTurnEvent } from '@steerline/contracts';
import { eventually } from '../support/env';
import { ServiceProcess } from '../support/processes';
import { startStack, type Stack } from '../support/stack';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TURNS = 8;
const STEERS_PER_TURN = 6;

/** A rolling deploy: each engine in turn stops (SIGTERM) and a new one starts, while turns run and clients steer. */
describe('a rolling restart of two engines under load', () => {
  let stack: Stack;
  const engines: ServiceProcess[] = [];
  const engine = async (id: string) => {
    const p = new ServiceProcess('engine', { ...stack.env, STEERLINE_ENGINE_ID: id, STEERLINE_ENGINE_LEASE_MS: '1500' });
    engines.push(p);
    await p.ready();
    return p;
  };

  beforeAll(async () => {
    stack = await startStack({ engine: false });
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.kill()));
    await stack.close();
  });

  /** A careful client: its own steerId, resubmitted after a 503 (the turn was between engines). */
  async function steer(tid: string, text: string): Promise<string | undefined> {
    const steerId = randomUUID();
    for (let attempt = 0; attempt < 40; attempt++) {
      const res = await stack.api('POST', `/turns/${tid}/steers`, { text, steerId });
      if (res.status === 202 || res.status === 200) return steerId;
      if (res.status === 409 && res.body.error.code === 'turn_not_running') return undefined;
      expect(res.status).toBe(503);
      await pause(250);
    }
    throw new Error(`steer ${steerId} was never answered`);
  }

  it('leaves no turn failed and no steer dropped, and the log passes the audit', async () => {
    const [first, second] = [await engine('rolling-1'), await engine('rolling-2')];
    const script = [...Array.from({ length: 5 }, () => ({ tool: { name: 'sleep', args: { ms: 900 } } })), { text: 'done' }];
    const turns: string[] = [];
    for (let i = 0; i < TURNS; i++) {
      const cid = (await stack.api('POST', '/conversations')).body.id;
      const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: `job ${i}`, model: { provider: 'scripted', script }, limits: { maxQueued: 50 } });
      expect(res.status).toBe(202);
      turns.push(res.body.turnId);
    }
    const accepted: string[] = [];
    const steering = Promise.all(
      turns.map(async (tid, i) => {
        for (let n = 0; n < STEERS_PER_TURN; n++) {
          await pause(350 + ((i * 37) % 100));
          const id = await steer(tid, `turn ${i} steer ${n}`);
          if (id) accepted.push(id);
        }
      }),
    );
    // The deploy: stop one engine, start its successor, then the other.
    await pause(600);
    first.signal('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    await engine('rolling-1b');
    second.signal('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    await engine('rolling-2b');
    await steering;

    const log = await eventually(async () => {
      const all = (await stack.nats.readAll()).filter((e) => turns.includes(e.event.turnId ?? ''));
      return all.filter((e) => isTerminalTurnEvent(e.event)).length === TURNS ? all : undefined;
    }, 90_000, 'every turn to end');
    expect(log.filter((e) => isTerminalTurnEvent(e.event)).map((e) => e.event.type)).toEqual(Array(TURNS).fill('TurnCompleted'));
    expect(log.filter((e) => e.event.type === 'SteerDropped')).toEqual([]);
    const delivered = new Set(log.flatMap((e) => (e.event.type === 'SteeringDelivered' ? [e.event.data.steerId] : [])));
    expect(accepted.filter((id) => !delivered.has(id))).toEqual([]);
    expect(accepted.length).toBeGreaterThan(TURNS * 2);
    expect(log.filter((e) => e.event.type === 'TurnResumed').length).toBeGreaterThan(0);
    expect(checkInvariants(log, { requireSettled: true })).toEqual([]);
  }, 180_000);
});

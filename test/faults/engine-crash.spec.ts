import { auditLog, type StoredEvent } from '@steerline/contracts';
import { eventually } from '../support/env';
import { ServiceProcess } from '../support/processes';
import { startStack, type Stack } from '../support/stack';

const LEASE_MS = '1500';
const sleep = (ms: number) => ({ tool: { name: 'sleep', args: { ms } } });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an engine that crashes, freezes or stops', () => {
  let stack: Stack;
  const engines: ServiceProcess[] = [];
  /** Turns start on any engine of the queue group: a test that needs one owner stops the others first. */
  const onlyEngine = async (id: string) => {
    await Promise.all(engines.map((e) => e.kill()));
    return engine(id);
  };
  const engine = async (id: string) => {
    const p = new ServiceProcess('engine', { ...stack.env, STEERLINE_ENGINE_ID: id, STEERLINE_ENGINE_LEASE_MS: LEASE_MS });
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

  async function turnWithQueuedSteers(script: unknown[], steers: string[]) {
    const cid = (await stack.api('POST', '/conversations')).body.id;
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'long job', model: { provider: 'scripted', script } })).body.turnId;
    await pause(200);
    const ids: string[] = [];
    for (const text of steers) {
      const res = await stack.api('POST', `/turns/${tid}/steers`, { text });
      expect(res.status).toBe(202);
      ids.push(res.body.steerId);
    }
    return { cid, tid, steerIds: ids };
  }
  const turnLog = async (tid: string): Promise<StoredEvent[]> => (await stack.nats.readAll()).filter((e) => e.event.turnId === tid);
  const tail = (events: StoredEvent[], n: number) =>
    events.slice(-n).map((e) => [e.event.type, (e.event.data as { reason?: string; error?: { code: string } }).reason ?? (e.event.data as { error?: { code: string } }).error?.code]);

  it('a killed engine’s turn is settled by another engine: steers dropped engine_lost, then TurnFailed', async () => {
    const a = await onlyEngine('engine-killed');
    const { tid, steerIds } = await turnWithQueuedSteers([sleep(60_000)], ['one', 'two']);
    await a.kill();
    await engine('engine-survivor');
    const events = await eventually(async () => {
      const log = await turnLog(tid);
      return log.at(-1)?.event.type === 'TurnFailed' ? log : undefined;
    }, 30_000, 'the orphaned turn to be settled');
    expect(tail(events, 3)).toEqual([
      ['SteerDropped', 'engine_lost'],
      ['SteerDropped', 'engine_lost'],
      ['TurnFailed', 'engine_lost'],
    ]);
    const receipt = await stack.api('GET', `/turns/${tid}/steers/${steerIds[0]}`, undefined, { Prefer: 'wait=5' });
    expect(receipt.status).toBe(409);
    expect(receipt.body.error).toMatchObject({ code: 'steer_dropped', reason: 'engine_lost', text: 'one' });
  });

  it('a frozen owner that comes back after its turn was settled is fenced: it appends nothing more', async () => {
    const zombie = await onlyEngine('engine-zombie');
    // The first tool outlasts the second engine's start-up, however slow the machine: the turn is still
    // in it when the owner freezes (checked, not assumed), and its result comes after the turn was settled.
    const { tid } = await turnWithQueuedSteers([sleep(8000), sleep(10)], ['while frozen']);
    await engine('engine-reaper');
    zombie.signal('SIGSTOP');
    expect((await turnLog(tid)).map((e) => e.event.type)).not.toContain('ToolCallFinished');
    const settled = await eventually(async () => {
      const log = await turnLog(tid);
      return log.at(-1)?.event.type === 'TurnFailed' ? log : undefined;
    }, 30_000, 'another engine to settle the frozen engine’s turn');
    zombie.signal('SIGCONT');
    // Its sleep is long over: the zombie now tries to append the tool's result and the delivery.
    await eventually(() => (zombie.lines.some((l) => l.includes('its events could not be appended')) ? true : undefined), 20_000, 'the zombie to be refused');
    expect((await turnLog(tid)).length).toBe(settled.length);
    expect(tail(settled, 2)).toEqual([
      ['SteerDropped', 'engine_lost'],
      ['TurnFailed', 'engine_lost'],
    ]);
  });

  it('SIGTERM settles running turns honestly (engine_shutdown) and the engine exits 0', async () => {
    const a = await onlyEngine('engine-stopping');
    const { tid } = await turnWithQueuedSteers([sleep(60_000)], ['pending']);
    a.signal('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(tail(await turnLog(tid), 2)).toEqual([
      ['SteerDropped', 'engine_shutdown'],
      ['TurnFailed', 'engine_shutdown'],
    ]);
  });

  it('after all of it the log passes the audit', async () => {
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);
    expect(report.turns).toBeGreaterThanOrEqual(3);
  });
});

import { auditLog, serveTools, type StoredEvent, type ToolServer } from '@steerline/runtime';
import { eventually } from '../support/env';
import { ServiceProcess } from '../support/processes';
import { startStack, type Stack } from '../support/stack';

const LEASE_MS = '1500';
const sleep = (ms: number) => ({ tool: { name: 'sleep', args: { ms } } });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Data = { reason?: string; error?: { code: string }; steerId?: string; step?: number; toolCallId?: string; attempt?: number };

/** Durable turns: a turn outlives the engine that ran it. Engines run as processes and are killed for real. */
describe('an engine that crashes, freezes or stops', () => {
  let stack: Stack;
  let tools: ToolServer;
  let ledgerCalls = 0;
  const engines: ServiceProcess[] = [];
  /** Turns start on any engine of the queue group: a test that needs one owner stops the others first. */
  const onlyEngine = async (id: string, env: Record<string, string> = {}) => {
    await Promise.all(engines.map((e) => e.kill()));
    return engine(id, env);
  };
  const engine = async (id: string, env: Record<string, string> = {}) => {
    const p = new ServiceProcess('engine', { ...stack.env, STEERLINE_ENGINE_ID: id, STEERLINE_ENGINE_LEASE_MS: LEASE_MS, ...env });
    engines.push(p);
    await p.ready();
    return p;
  };

  beforeAll(async () => {
    stack = await startStack({ engine: false });
    // A remote tool that is not idempotent: a call cut off by a crash must not run twice.
    tools = serveTools(stack.nats.nc, stack.prefix, 'ledger', [
      {
        descriptor: { name: 'post_ledger', description: 'Posts an entry; slow, and not safe to repeat.', parameters: { type: 'object', properties: {} } },
        async run(_args, { signal }) {
          ledgerCalls += 1;
          await new Promise((resolve, reject) => {
            const timer = setTimeout(resolve, 60_000);
            timer.unref();
            signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
          });
          return 'posted';
        },
      },
    ]);
    await tools.ready;
  });
  afterAll(async () => {
    tools.stop();
    await Promise.all(engines.map((e) => e.kill()));
    await stack.close();
  });

  async function startTurn(script: unknown[]) {
    const cid = (await stack.api('POST', '/conversations')).body.id;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'long job', model: { provider: 'scripted', script } });
    expect(res.status).toBe(202);
    return { cid, tid: res.body.turnId as string };
  }
  async function steer(tid: string, text: string): Promise<string> {
    const res = await stack.api('POST', `/turns/${tid}/steers`, { text });
    expect(res.status).toBe(202);
    return res.body.steerId;
  }
  const turnLog = async (tid: string): Promise<StoredEvent[]> => (await stack.nats.readAll()).filter((e) => e.event.turnId === tid);
  const has = (type: string, where: (d: Data) => boolean = () => true) => async (tid: string) =>
    (await turnLog(tid)).some((e) => e.event.type === type && where(e.event.data as Data));
  const until = (check: (tid: string) => Promise<boolean>, tid: string, what: string) =>
    eventually(async () => ((await check(tid)) ? true : undefined), 40_000, what);
  const summary = (events: StoredEvent[]) =>
    events.map((e) => {
      const d = e.event.data as Data;
      return [e.event.type, d.reason ?? d.error?.code ?? d.attempt].filter((x) => x !== undefined).join(':');
    });

  it('kill -9 inside a tool with three steers queued and one waiting: another engine resumes, delivers all three in order, the turn completes', async () => {
    const a = await onlyEngine('engine-killed');
    // 6 s: three steers, one after the other, and the read of the third go in before the freeze, however busy the machine.
    const { tid } = await startTurn([sleep(6000), { text: 'finished' }]);
    await until(has('ToolCallStarted'), tid, 'the tool to start');
    const steerIds = [await steer(tid, 'one'), await steer(tid, 'two'), await steer(tid, 'three')];
    const waiting = stack.api('GET', `/turns/${tid}/steers/${steerIds[2]}`, undefined, { Prefer: 'wait=40' });
    // Frozen first (its clock stops: the tool cannot finish there), however long the survivor takes to start on a busy machine.
    const killedAt = Date.now();
    a.signal('SIGSTOP');
    // Still inside the tool when frozen (checked, not assumed).
    expect(await has('ToolCallFinished')(tid)).toBe(false);
    await engine('engine-survivor');
    await a.kill();
    const events = await stack.turnEnded(tid, 40_000);
    const resumed = events.find((e) => e.event.type === 'TurnResumed')!;
    // Lease (1.5 s here, 5 s by default) plus one reaper pass; docs/reliability.md quotes this figure.
    console.log(`durable turns: resumed ${new Date(resumed.event.at).getTime() - killedAt} ms after kill -9 (lease ${LEASE_MS} ms)`);
    expect(resumed.event.data).toEqual({ engineId: 'engine-survivor', previousEngineId: 'engine-killed', attempt: 1 });
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    const deliveries = events.filter((e) => e.event.type === 'SteeringDelivered').map((e) => (e.event.data as Data).steerId);
    expect(deliveries).toEqual(steerIds);
    expect(events.filter((e) => e.event.type === 'ToolCallFinished')).toHaveLength(1);
    const receipt = await waiting;
    expect(receipt.status).toBe(200);
    expect(receipt.body).toMatchObject({ status: 'delivered', text: 'three' });
    const turn = await eventually(async () => {
      const view = await stack.api('GET', `/turns/${tid}`);
      return view.body.status === 'completed' ? view.body : undefined;
    }, 20_000, 'the read model to show the completed turn');
    expect(turn).toMatchObject({ resumes: 1, steers: { delivered: 3, dropped: 0, queued: 0 } });
  });

  it('kill -9 while waiting for the model: the same request is sent again on the new engine, answered once', async () => {
    const a = await onlyEngine('engine-model-wait');
    const { tid } = await startTurn([{ ...sleep(10), delayMs: 4000 }, { text: 'done' }]);
    await until(has('ModelRequested'), tid, 'the first model request');
    const queued = await steer(tid, 'while the model thinks');
    // Frozen first, so the model cannot answer there while the survivor starts.
    a.signal('SIGSTOP');
    await engine('engine-model-survivor');
    await a.kill();
    const events = await stack.turnEnded(tid, 40_000);
    expect(summary(events)).toEqual([
      'TurnStarted', 'ModelRequested', 'SteerQueued', 'TurnResumed:1', 'ModelResponded', 'ToolCallStarted', 'ToolCallFinished',
      'SteeringDelivered', 'ModelRequested', 'ModelResponded', 'TurnCompleted',
    ]);
    expect((events[7].event.data as Data).steerId).toBe(queued);
  });

  it('a call of a tool that is not idempotent, cut off by the crash, ends interrupted for the model to see, and never runs twice', async () => {
    const a = await onlyEngine('engine-ledger');
    await eventually(() => (a.lines.length > 0 ? true : undefined), 5000, 'engine output');
    const { tid } = await startTurn([{ tool: { name: 'post_ledger', args: {} } }, { text: 'done' }]);
    await until(has('ToolCallStarted'), tid, 'the ledger call to start');
    await eventually(() => (ledgerCalls === 1 ? true : undefined), 10_000, 'the ledger service to get the call');
    await engine('engine-ledger-survivor');
    await a.kill();
    const events = await stack.turnEnded(tid, 40_000);
    const finished = events.filter((e) => e.event.type === 'ToolCallFinished');
    expect(finished.map((e) => (e.event.data as Data).error?.code)).toEqual(['interrupted']);
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    expect(ledgerCalls).toBe(1);
  });

  it('a frozen owner that wakes up after its turn was adopted is fenced: it appends nothing, and does not take the turn back', async () => {
    const zombie = await onlyEngine('engine-zombie');
    // The turn is in its first tool when the owner freezes (checked, not assumed).
    const { tid } = await startTurn([sleep(6000), sleep(10)]);
    await until(has('ToolCallStarted'), tid, 'the tool to start');
    await steer(tid, 'while frozen');
    // Frozen before the second engine starts, however slow its start-up: the turn is still in the tool.
    zombie.signal('SIGSTOP');
    await engine('engine-adopter');
    expect((await turnLog(tid)).map((e) => e.event.type)).not.toContain('ToolCallFinished');
    await until(has('TurnResumed'), tid, 'another engine to adopt the frozen engine’s turn');
    zombie.signal('SIGCONT');
    // Its sleep is long over: the zombie now tries to append the tool's result and the delivery.
    await eventually(() => (zombie.lines.some((l) => l.includes('its events could not be appended')) ? true : undefined), 20_000, 'the zombie to be refused');
    const events = await stack.turnEnded(tid, 40_000);
    expect(events.filter((e) => e.event.type === 'TurnResumed')).toHaveLength(1);
    expect(summary(events).filter((t) => t.startsWith('ToolCallFinished'))).toHaveLength(2);
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
  });

  it('SIGTERM hands the turns over instead of dropping their steers; the engine exits 0 and the next engine resumes them', async () => {
    const a = await onlyEngine('engine-stopping');
    // 10 s: a steer, two queued turns and their projection all happen inside the tool, however busy the machine.
    const { cid, tid } = await startTurn([sleep(10_000), { text: 'done' }]);
    await until(has('ToolCallStarted'), tid, 'the tool to start');
    const pending = await steer(tid, 'pending');
    // Two turns wait behind it: one is cancelled while no engine runs, the other runs after it.
    const queue = (prompt: string) => stack.api('POST', `/conversations/${cid}/turns`, { prompt, model: { provider: 'scripted', script: [{ text: prompt }] }, whenBusy: 'queue' });
    const [cancelled, after] = [(await queue('cancel me')).body.turnId as string, (await queue('run me')).body.turnId as string];
    await eventually(async () => ((await stack.api('GET', `/turns/${after}`)).body.status === 'queued' ? true : undefined), 10_000, 'the queued turns in the read model');
    // Still inside its tool (checked, not assumed): the queued turns wait.
    expect(await has('ToolCallFinished')(tid)).toBe(false);
    a.signal('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(summary(await turnLog(tid)).some((t) => t.startsWith('SteerDropped') || t.startsWith('TurnFailed'))).toBe(false);
    // Between engines (the last event is a queued turn's, not the running one's) both the running turn and a queued one say "again in a moment".
    for (const res of [await stack.api('POST', `/turns/${tid}/steers`, { text: 'between engines' }), await stack.api('POST', `/turns/${cancelled}/cancel`, {})]) {
      expect({ status: res.status, code: res.body.error?.code ?? res.body.code, retryAfter: res.headers.get('retry-after') }).toEqual({ status: 503, code: 'unavailable', retryAfter: '1' });
    }
    await engine('engine-after-restart');
    await eventually(async () => ((await stack.api('POST', `/turns/${cancelled}/cancel`, {})).status === 202 ? true : undefined), 20_000, 'the cancel to be taken by the adopter');
    const events = await stack.turnEnded(tid, 40_000);
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    expect(events.find((e) => e.event.type === 'SteeringDelivered')?.event.data).toMatchObject({ steerId: pending });
    expect(events.find((e) => e.event.type === 'TurnResumed')?.event.data).toMatchObject({ previousEngineId: 'engine-stopping', engineId: 'engine-after-restart' });
    expect(summary(await stack.turnEnded(cancelled))).toEqual(['TurnQueued', 'TurnCancelled:cancelled by the client']);
    expect((await stack.turnEnded(after, 40_000)).at(-1)!.event.type).toBe('TurnCompleted');
  });

  it('past STEERLINE_RESUME_LIMIT a lost engine’s turn fails engine_lost, its steers dropped first', async () => {
    const a = await onlyEngine('engine-limited');
    const { tid } = await startTurn([sleep(60_000)]);
    await until(has('ToolCallStarted'), tid, 'the tool to start');
    await steer(tid, 'one');
    await engine('engine-no-resumes', { STEERLINE_RESUME_LIMIT: '0' });
    await a.kill();
    const events = await stack.turnEnded(tid, 40_000);
    expect(summary(events).slice(-2)).toEqual(['SteerDropped:engine_lost', 'TurnFailed:engine_lost']);
  });

  it('kill -9 right after an interrupt is accepted: the resumed turn delivers it, and the cut call never runs twice', async () => {
    const a = await onlyEngine('engine-interrupted');
    const before = ledgerCalls;
    // Step 2's answer takes 4 s: the engine is frozen while it waits for it, so the survivor must send it again.
    const { tid } = await startTurn([{ tool: { name: 'post_ledger', args: {} } }, { text: 'redirected', delayMs: 4000 }]);
    await until(has('ToolCallStarted'), tid, 'the ledger call to start');
    await eventually(() => (ledgerCalls === before + 1 ? true : undefined), 10_000, 'the ledger service to get the call');
    const res = await stack.api('POST', `/turns/${tid}/steers`, { text: 'stop posting', urgency: 'interrupt' });
    // Accepted means logged: the cut and the delivery are in the same decision.
    expect(res.body).toMatchObject({ urgency: 'interrupt', text: 'stop posting' });
    a.signal('SIGSTOP');
    await engine('engine-interrupt-survivor');
    await a.kill();
    const events = await stack.turnEnded(tid, 40_000);
    expect(summary(events)).toEqual([
      'TurnStarted', 'ModelRequested', 'ModelResponded', 'ToolCallStarted', 'SteerQueued', 'ToolCallFinished:interrupted', 'SteeringDelivered', 'ModelRequested', 'TurnResumed:1', 'ModelResponded', 'TurnCompleted',
    ]);
    expect(events.find((e) => e.event.type === 'ToolCallFinished')!.event.data).toMatchObject({ ok: false, error: { code: 'interrupted' } });
    expect(events.find((e) => e.event.type === 'SteeringDelivered')!.event.data).toMatchObject({ boundary: 'interrupt', requestStep: 2 });
    expect(ledgerCalls).toBe(before + 1);
    expect((await stack.api('GET', `/turns/${tid}/steers/${res.body.steerId}`)).body).toMatchObject({ status: 'delivered', boundary: 'interrupt' });
  });

  it('after all of it the log passes the audit', async () => {
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { requireSettled: true });
    expect(report.violations).toEqual([]);
    expect(report.turns).toBeGreaterThanOrEqual(6);
  });
});

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import readline from 'node:readline';
import { SteerlineClient } from '@steerline/client';
import { STEER_SETTLEMENTS } from '@steerline/contracts';
import { auditLog } from '@steerline/runtime';
import { eventually } from '../support/env';
import { ServiceProcess } from '../support/processes';
import { startStack, type Stack } from '../support/stack';

const LEASE_MS = 2000;
const RUNNER = join(__dirname, '../support/external-runner.cjs');

/** An external turn's runner is a process of its own (docs/runner-protocol.md); killed, it loses the turn. */
describe('an external turn whose runner is killed', () => {
  let stack: Stack;
  beforeAll(async () => {
    if (!existsSync(join(__dirname, '../../dist/libs/client/src/index.js'))) throw new Error('dist/ is missing: run `npm run build` (npm run test:faults does)');
    stack = await startStack({ env: { STEERLINE_RUNNER_LEASE_MS: String(LEASE_MS) } });
  });
  afterAll(() => stack?.close());

  it('kill -9 of the runner: runner_lost within the lease plus 5 s, every steer settled once, a clean audit', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const child = spawn(process.execPath, [RUNNER, stack.url, cid], { stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    const lines: Record<string, any>[] = [];
    const errors: string[] = [];
    readline.createInterface({ input: child.stdout! }).on('line', (l) => lines.push(JSON.parse(l)));
    readline.createInterface({ input: child.stderr! }).on('line', (l) => errors.push(l));
    const stage = (name: string) => eventually(async () => lines.find((l) => l.stage === name) ?? (errors.length ? Promise.reject(new Error(errors.join('\n'))) : undefined), 20_000, `the runner at ${name}`);
    try {
      const { turnId } = await stage('tools');
      const first = await stack.api('POST', `/turns/${turnId}/steers`, { text: 'read the tests first' });
      expect(first.status).toBe(202);
      child.stdin!.write('go\n');
      const atModel = await stage('model');
      expect(atModel.next).toMatchObject({ next: 'model', step: 2, steers: [{ steerId: first.body.steerId, text: 'read the tests first' }] });
      const later = await Promise.all(['keep the API', 'and the docs'].map((text) => stack.api('POST', `/turns/${turnId}/steers`, { text })));
      expect(later.map((r) => r.status)).toEqual([202, 202]);

      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      const killed = performance.now();
      const events = await stack.turnEnded(turnId, LEASE_MS + 5_000);
      expect(performance.now() - killed).toBeLessThan(LEASE_MS + 5_000);
      expect(events.at(-1)!.event).toMatchObject({ type: 'TurnFailed', data: { error: { code: 'runner_lost' } } });

      // Every steer settled exactly once: the delivered one stays delivered, the queued ones drop with their text.
      const settlements = events.filter((e) => (STEER_SETTLEMENTS as readonly string[]).includes(e.event.type)).map((e) => ({ type: e.event.type, ...(e.event.data as any) }));
      expect(settlements.map((s) => [s.type, s.text, s.reason])).toEqual([
        ['SteeringDelivered', 'read the tests first', undefined],
        ['SteerDropped', 'keep the API', 'turn_failed'],
        ['SteerDropped', 'and the docs', 'turn_failed'],
      ]);
      const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { tenantId: 'default', conversationId: cid, requireSettled: true });
      expect(report.violations).toEqual([]);
      expect(report.steers).toBe(3);
      // The turn is gone from the engine: a late report from another runner finds nothing to report to.
      await eventually(async () => ((await stack.api('POST', `/turns/${turnId}/runner/lease`, { lease: 'A'.repeat(43) })).status === 409 ? true : undefined), 5_000, 'the turn to be released');
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/** The other side: the engine that owns an external turn dies, and the runner goes on with the engine that resumes it. */
describe('an external turn whose engine is killed', () => {
  let stack: Stack;
  let first: ServiceProcess | undefined;
  let second: ServiceProcess | undefined;
  beforeAll(async () => {
    stack = await startStack({ engine: false });
  });
  afterAll(async () => {
    await first?.kill();
    await second?.kill();
    await stack?.close();
  });

  it('another engine resumes it from the log; the runner’s report waits for it and gets its steer, no call is marked interrupted', async () => {
    // A short engine lease: the engine that resumes the turn finds it orphaned soon after the kill.
    const env = { ...stack.env, STEERLINE_ENGINE_LEASE_MS: '1500' };
    first = new ServiceProcess('engine', { ...env, STEERLINE_ENGINE_ID: 'engine-a' });
    await first.ready();
    const client = new SteerlineClient({ baseUrl: stack.url });
    const cid = (await client.createConversation()).id;
    const turn = await client.startExternalTurn(cid, { prompt: 'go' });
    await turn.reportAnswer({ step: 1, text: '', toolCalls: [{ id: 'call_1_0', name: 'sleep', args: { ms: 10 } }] });
    const steer = await client.steer(turn.turnId, 'mind the edge cases');

    await first.kill();
    second = new ServiceProcess('engine', { ...env, STEERLINE_ENGINE_ID: 'engine-b' });
    await second.ready();
    const next = await turn.reportResults(1, [{ toolCallId: 'call_1_0', ok: true, output: 'slept', durationMs: 10 }]);
    expect(next).toMatchObject({ next: 'model', step: 2, steers: [{ steerId: steer.steerId, text: 'mind the edge cases' }] });
    expect(await turn.reportAnswer({ step: 2, text: 'done', toolCalls: [] })).toEqual({ next: 'end', status: 'completed' });
    expect(turn.signal.aborted).toBe(false);

    const events = await stack.turnEnded(turn.turnId);
    const types = events.map((e) => e.event.type);
    expect(types).toContain('TurnResumed');
    expect(events.filter((e) => e.event.type === 'ToolCallFinished').map((e) => (e.event.data as { ok: boolean }).ok)).toEqual([true]);
    const report = await auditLog(stack.nats.js, stack.nats.jsm, stack.nats.s, { tenantId: 'default', conversationId: cid, requireSettled: true });
    expect(report.violations).toEqual([]);
  });
});

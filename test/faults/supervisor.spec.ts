import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import readline from 'node:readline';
import { createTestDatabase, eventually, openNats, uniquePrefix, type NatsHandle } from '../support/env';
import { freePort } from '../support/processes';
import demoModel from '../../scripts/lib/demo-model.json';

const ROOT = join(__dirname, '../..');

describe('npm start supervises its three services', () => {
  let supervisor: ChildProcess;
  let nats: NatsHandle;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const lines: string[] = [];

  beforeAll(async () => {
    const prefix = uniquePrefix();
    db = await createTestDatabase();
    nats = await openNats(prefix);
    const port = await freePort();
    supervisor = spawn(process.execPath, [join(ROOT, 'scripts/start.mjs')], {
      cwd: ROOT,
      env: { ...process.env, STEERLINE_PREFIX: prefix, DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: '0', STEERLINE_ENGINE_LEASE_MS: '1500' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [supervisor.stdout!, supervisor.stderr!]) readline.createInterface({ input: stream }).on('line', (l) => lines.push(l));
  });
  afterAll(async () => {
    if (supervisor.exitCode === null) supervisor.kill('SIGKILL');
    await nats.close();
    await db.drop();
  });

  const engineReadyPids = () =>
    lines.filter((l) => l.startsWith('engine') && l.includes('engine ready')).map((l) => Number(/"pid":(\d+)/.exec(l)?.[1]));

  it('prints the gateway URL, restarts a service that dies, and stops everything on SIGTERM', async () => {
    const url = await eventually(() => lines.map((l) => /Steerline is ready: (\S+)/.exec(l)?.[1]).find(Boolean), 60_000, 'Steerline is ready');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    const [firstEngine] = engineReadyPids();
    process.kill(firstEngine, 'SIGKILL');
    await eventually(() => (lines.some((l) => /engine exited unexpectedly \(signal SIGKILL\).*restart #1/.test(l)) ? true : undefined), 10_000, 'the restart notice');
    await eventually(() => (engineReadyPids().length === 2 ? true : undefined), 20_000, 'the engine to be ready again');
    expect(engineReadyPids()[1]).not.toBe(firstEngine);

    // The restarted engine takes turns.
    const cid = ((await (await fetch(`${url}/v1/conversations`, { method: 'POST' })).json()) as { id: string }).id;
    const turn = await fetch(`${url}/v1/conversations/${cid}/turns`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'hi' }) });
    expect(turn.status).toBe(202);
    // It names no model: npm start gave the engine the console's demo as STEERLINE_DEFAULT_MODEL.
    const { turnId } = (await turn.json()) as { turnId: string };
    const started = await eventually(async () => (await nats.readAll()).find((e) => e.event.turnId === turnId && e.event.type === 'TurnStarted')?.event, 10_000, 'the turn to start');
    expect(started.data).toMatchObject({ model: { provider: 'scripted', script: demoModel.script } });

    // 'close', not 'exit': by then every line it printed has been read.
    const exited = new Promise<number | null>((r) => supervisor.once('close', (code) => r(code)));
    supervisor.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(lines.some((l) => l.includes('gateway stopped'))).toBe(true);
    expect(lines.some((l) => l.includes('engine stopped'))).toBe(true);
    expect(lines.some((l) => l.includes('persistence stopped'))).toBe(true);
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';
import { STEER_SETTLEMENTS } from '@steerline/contracts';
import { SettlementStore } from '../../examples/nest-consumer/settlement-store';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

const ENTRY = join(__dirname, '../../dist/examples/nest-consumer/main.js');
const EXIT_WITH_PARENT = join(__dirname, '../../scripts/lib/exit-with-parent.cjs');
const DURABLE = 'nest-settlements-e2e';

/** examples/nest-consumer as a real process, from dist/ as a user would run it. */
class ConsumerProcess {
  readonly lines: string[] = [];
  private readonly child: ChildProcess;
  readonly exited: Promise<void>;

  constructor(env: Record<string, string>) {
    if (!existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run \`npm run build\` (npm test does)`);
    this.child = spawn(process.execPath, ['--require', EXIT_WITH_PARENT, ENTRY], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    for (const stream of [this.child.stdout!, this.child.stderr!]) readline.createInterface({ input: stream }).on('line', (line) => this.lines.push(line));
  }

  ready(): Promise<true> {
    return eventually(() => {
      if (this.child.exitCode !== null) throw new Error(`the consumer exited:\n${this.lines.join('\n')}`);
      return this.lines.some((l) => l.includes('nest-consumer ready')) || undefined;
    }, 20_000, 'the Nest consumer to be ready');
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}

describe('examples/nest-consumer: a Nest app with @EventPattern handlers on the JetStream transport', () => {
  let stack: Stack;
  let dir: string;
  let store: SettlementStore;
  let consumer: ConsumerProcess | undefined;

  beforeAll(async () => {
    stack = await startStack();
    dir = mkdtempSync(join(tmpdir(), 'nest-consumer-'));
    store = new SettlementStore(join(dir, 'settlements.jsonl'));
  });
  afterAll(async () => {
    await consumer?.kill();
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async () => {
    consumer = new ConsumerProcess({ NATS_URL: stack.env.NATS_URL, STEERLINE_PREFIX: stack.prefix, SETTLEMENTS_FILE: store.file, NEST_CONSUMER_DURABLE: DURABLE });
    await consumer.ready();
  };
  const steer = async (turnId: string, text: string, wait = true) => {
    const r = await stack.api('POST', `/turns/${turnId}/steers`, { text }, wait ? { Prefer: 'wait=30' } : {});
    expect([200, 202]).toContain(r.status);
    return r.body.steerId as string;
  };

  it('records every settlement of a turn exactly once, though it is killed (SIGKILL) mid-turn and restarted', async () => {
    await start();
    const cid = (await stack.api('POST', '/conversations')).body.id;
    const sleep = { tool: { name: 'sleep', args: { ms: 300 } } };
    // 40 steps of 300 ms, ended by the cancel below: the turn still runs for the last steers after
    // the consumer's kill and restart, however long a loaded machine takes over them.
    const turnId = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'p', model: { provider: 'scripted', script: [...Array(40).fill(sleep), { text: 'done' }] } })).body.turnId;
    await eventually(async () => ((await stack.api('GET', `/turns/${turnId}`)).status === 200 ? true : undefined), 20_000, 'the turn to be projected');

    // Before the kill: one delivered, one withdrawn (dropped) — or delivered, if a boundary came first.
    const steerIds = [await steer(turnId, 'first')];
    const withdrawn = await steer(turnId, 'second', false);
    steerIds.push(withdrawn);
    await stack.api('DELETE', `/turns/${turnId}/steers/${withdrawn}`);
    await eventually(() => (store.records().length >= 2 ? true : undefined), 10_000, 'the first two settlements to be recorded');
    await consumer!.kill();

    // While it is down, and after it is back.
    steerIds.push(await steer(turnId, 'third'), await steer(turnId, 'fourth'));
    await start();
    steerIds.push(await steer(turnId, 'fifth'));
    const queued = await steer(turnId, 'sixth', false);
    steerIds.push(queued);
    expect((await stack.api('POST', `/turns/${turnId}/cancel`, {})).status).toBe(202);
    await stack.turnEnded(turnId);

    // The log's settlements of this turn, and the consumer caught up with all of them.
    const settlements = (await stack.turnEvents(turnId)).filter((e) => (STEER_SETTLEMENTS as readonly string[]).includes(e.event.type));
    expect(settlements).toHaveLength(6);
    const lastSeq = Math.max(...settlements.map((s) => s.streamSeq));
    await eventually(() => ((store.lastSeq() ?? 0) >= lastSeq ? true : undefined), 15_000, 'the consumer to record the last settlement');
    // The ack follows the handler's return: wait for it rather than race it.
    await eventually(async () => ((await stack.nats.jsm.consumers.info(stack.nats.s.stream, DURABLE)).num_ack_pending === 0 ? true : undefined), 15_000, 'the last settlement to be acked');

    const records = store.records();
    expect(records.map((r) => r.steerId).sort()).toEqual([...steerIds].sort());
    expect(records.map((r) => r.seq)).toEqual(settlements.map((s) => s.streamSeq));
    expect(records.map((r) => r.type)).toEqual(settlements.map((s) => s.event.type));
  }, 90_000);
});

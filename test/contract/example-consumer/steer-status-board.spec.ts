import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../../support/env';
import { startStack, steerWhileHeld, type Stack } from '../../support/stack';
import { runSteeringScenario, type ScenarioSteer } from '../scenario';
import { SteerStatusBoard, emptyStore } from './steer-status-board';

describe('an example consumer built only on the kit: a per-steer status board', () => {
  let stack: Stack;
  const store = emptyStore();
  let board: SteerStatusBoard;

  const lastSeq = async () => (await stack.nats.jsm.streams.info(stack.nats.s.stream)).state.last_seq;
  const caughtUp = async () => {
    const last = await lastSeq();
    await eventually(() => store.checkpoint >= last || undefined, 10_000, `the board to reach stream sequence ${last}`);
  };
  /** The API's receipt; a dropped steer answers 409 `steer_dropped` carrying the receipt's fields. */
  const receipt = async ({ turnId, steerId }: ScenarioSteer) => {
    const r = await stack.api('GET', `/turns/${turnId}/steers/${steerId}`);
    if (r.status !== 409) return r.body;
    const { code: _code, message: _message, ...fields } = r.body.error;
    return { ...fields, status: 'dropped' };
  };

  beforeAll(async () => {
    stack = await startStack();
    board = new SteerStatusBoard(store);
    await board.start(stack.nats.nc, stack.prefix);
  });
  afterAll(async () => {
    await board?.stop();
    // The durable outlives the board; the suite removes it with its stream.
    await stack?.close();
  });

  it('following a live run, its table holds every steer with the same status, position, step and reason as the API’s receipts', async () => {
    const { steers } = await runSteeringScenario(stack);
    await caughtUp();
    expect(steers).toHaveLength(3);
    for (const steer of steers) {
      const { conversationId, ...row } = board.row(steer.steerId)!;
      expect(row).toEqual(await receipt(steer));
      expect(conversationId).toBeTruthy();
    }
    expect(steers.map((s) => board.row(s.steerId)!.status).sort()).toEqual(['delivered', 'dropped', 'dropped']);
    expect([...store.applied.values()].every((n) => n === 1)).toBe(true);
  }, 60_000);

  it('restarted from its stored checkpoint after missing events, it catches up without applying any event twice', async () => {
    await board.stop();
    const before = store.checkpoint;
    const cid = (await stack.api('POST', '/conversations')).body.id;
    const script = [{ tool: { name: 'sleep', args: { ms: 10 } } }, { text: 'ok' }];
    // Step 1's call waits for approval, so the steer is surely queued in step 1 and delivered at its end.
    const turnId = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'p', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'] } })).body.turnId;
    const steered = await steerWhileHeld(stack, turnId, 'While you were away');
    expect(steered.status).toBe(200);
    await eventually(async () => (await stack.api('GET', `/turns/${turnId}`)).body?.status === 'completed' || undefined, 20_000, 'the turn to complete');
    expect(store.checkpoint).toBe(before);

    board = new SteerStatusBoard(store);
    await board.start(stack.nats.nc, stack.prefix);
    await caughtUp();
    const { conversationId: _c, ...row } = board.row(steered.body.steerId)!;
    expect(row).toEqual(await receipt({ turnId, steerId: steered.body.steerId }));
    expect([...store.applied.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  }, 30_000);

  it('imports nothing but the consumer kit', () => {
    const sources = readdirSync(__dirname).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'));
    const imports = sources.flatMap((f) => [...readFileSync(join(__dirname, f), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]));
    // The kit is two packages since the contracts split: the pure contracts and the NATS runtime (consumeEvents).
    expect(new Set(imports)).toEqual(new Set(['@steerline/contracts', '@steerline/runtime']));
  });
});

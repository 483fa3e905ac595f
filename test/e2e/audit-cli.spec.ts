import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { headers } from '@nats-io/transport-node';
import { EVENT_TYPE_HEADER, uuidv7 } from '@steerline/contracts';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

const run = promisify(execFile);
const AUDIT = join(__dirname, '../../dist/scripts/audit.js');

async function audit(prefix: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run('node', [AUDIT, '--prefix', prefix, '--settled'], { env: { ...process.env } });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, out: e.stdout };
  }
}

describe('npm run audit', () => {
  let stack: Stack;
  beforeAll(async () => {
    if (!existsSync(AUDIT)) throw new Error('dist/scripts/audit.js is missing: run `npm run build` (npm test does)');
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it('exits 0 on a clean log and 1 naming the invariant, turn, steer and stream sequence of a violation', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id;
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'x', model: { provider: 'scripted', script: [{ text: 'ok', delayMs: 300 }] } })).body.turnId;
    await stack.api('POST', `/turns/${tid}/steers`, { text: 'hello' });
    await eventually(async () => ((await stack.nats.readAll()).some((e) => e.event.type === 'TurnCompleted') ? true : undefined));

    const clean = await audit(stack.prefix);
    expect(clean.code).toBe(0);
    expect(clean.out).toMatch(/: 0 violation\(s\)/);

    // A settlement for a steer that was never queued, appended behind the engine's back.
    const steerId = uuidv7();
    const h = headers();
    h.set(EVENT_TYPE_HEADER, 'SteerDropped');
    const bogus = { id: uuidv7(), type: 'SteerDropped', version: 1, tenantId: 'default', conversationId: cid, turnId: tid, seq: 99, at: new Date().toISOString(), data: { steerId, text: 'ghost', position: 7, reason: 'withdrawn' } };
    const ack = await stack.nats.js.publish(stack.nats.s.conversationEvents('default', cid), JSON.stringify(bogus), { headers: h });

    const dirty = await audit(stack.prefix);
    expect(dirty.code).toBe(1);
    expect(dirty.out).toContain(`I2  stream seq ${ack.seq}  turn ${tid}  steer ${steerId}`);
    expect(dirty.out).toMatch(/I1 .*events after the terminal event/);
  });
});

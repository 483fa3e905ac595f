import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { startStack, type Stack } from '../support/stack';

const DEMO = path.resolve(__dirname, '../../dist/scripts/demo.js');

describe('npm run demo', () => {
  let stack: Stack;
  beforeAll(async () => {
    if (!existsSync(DEMO)) throw new Error(`${DEMO} is missing: run \`npm run build\` first (npm test does)`);
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it('runs to completion against the services without a terminal: live events, receipts of all three kinds, the transcript', async () => {
    const child = spawn(process.execPath, [DEMO], {
      env: { ...process.env, GATEWAY_URL: stack.url, CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(timer);

    expect({ code, err }).toEqual({ code: 0, err: '' });
    expect(out).toContain('(non-interactive)');
    // No terminal control sequences in plain mode.
    expect(out).not.toContain('\x1b[');
    expect(out).toMatch(/receipt for "Keep the public API unchanged" \(waited for\): delivered at step 1, tool_results/);
    expect(out).toMatch(/receipt for "Add a test for the empty input first" \(answered at once\): queued/);
    expect(out).toMatch(/receipt for "Rename everything to snake_case" \(withdrawn\): dropped \(withdrawn\)/);
    expect(out).toMatch(/SteeringDelivered +steer #1 DELIVERED/);
    // Without a terminal each call that asks for approval is approved by the demo itself.
    expect(out).toMatch(/ToolApprovalRequested +tool sleep \{"ms":1500\} WAITS FOR APPROVAL/);
    expect(out).toMatch(/ToolApprovalDecided +tool call call_1_0 APPROVED by user: approved automatically/);
    expect(out).toMatch(/progress: \[done\] step 3 · steers queued 0 · delivered 2 · dropped 1/);
    expect(out).toContain('Transcript (the model context, in order):');
    expect(out).toContain('"Acknowledged: Keep the public API unchanged\\nAcknowledged: Add a test for the empty input first"');
    expect(out).toMatch(/#3 dropped +\(withdrawn\) "Rename everything to snake_case"/);
  });
});

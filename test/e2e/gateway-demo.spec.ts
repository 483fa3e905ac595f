import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { eventually } from '../support/env';
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
    // 'close', not 'exit': by then all it printed has been read.
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
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
    expect(out).toMatch(/ToolApprovalRequested +tool sleep \{"ms":3000\} WAITS FOR APPROVAL/);
    expect(out).toMatch(/ToolApprovalDecided +tool call call_1_0 APPROVED by user: approved automatically/);
    expect(out).toMatch(/progress: \[done\] step 3 · steers queued 0 · delivered 2 · dropped 1/);
    expect(out).toContain('Transcript (the model context, in order):');
    expect(out).toContain('"Acknowledged: Keep the public API unchanged\\nAcknowledged: Add a test for the empty input first"');
    expect(out).toMatch(/#3 dropped +\(withdrawn\) "Rename everything to snake_case"/);
  });
});

/**
 * The demo in a real terminal: tmux (.ci/run installs it when missing) runs it in
 * a pane of a known size on a server of its own, the test types into the pane and
 * reads the screen back with capture-pane.
 */
describe('npm run demo in a terminal', () => {
  const socket = `steerline-demo-${process.pid}`;
  const tmux = (...args: string[]) => run('tmux', ['-L', socket, '-f', '/dev/null', ...args]);
  /** The pane's rows as shown, trailing spaces cut. */
  const screen = async () => (await tmux('capture-pane', '-p', '-t', 'demo')).split('\n').map((r) => r.trimEnd()).slice(0, -1);
  let stack: Stack;

  beforeAll(async () => {
    if (!existsSync(DEMO)) throw new Error(`${DEMO} is missing: run \`npm run build\` first (npm test does)`);
    await run('tmux', ['-V']).catch(() => {
      throw new Error('tmux is missing: apt-get install tmux (.ci/run does)');
    });
    stack = await startStack();
  });
  afterAll(async () => {
    await tmux('kill-server').catch(() => undefined);
    await stack?.close();
  });

  it('shows typed text on its own input line while the status line redraws, survives a resize to a narrow pane, and sends it on Enter', async () => {
    // CI=true would make the demo plain; the pane is a terminal, so the demo is interactive.
    const command = `env -u CI GATEWAY_URL=${stack.url} ${process.execPath} ${DEMO}`;
    await tmux('new-session', '-d', '-s', 'demo', '-x', '72', '-y', '16', command);
    await tmux('set-option', '-t', 'demo', 'remain-on-exit', 'on');
    let last: string[] = [];
    const rowsOf = (want: (rows: string[]) => boolean, what: string) =>
      eventually(async () => ((last = await screen()), want(last) ? last : undefined), 15_000, what).catch((err: Error) => {
        throw new Error(`${err.message}; the screen:\n${last.join('\n')}`);
      });

    // The first lines (the gateway, the turn's id) are on the screen too, above the status line.
    await rowsOf((rows) => rows.at(-2)!.startsWith('[running] step 1') && rows.some((r) => r.startsWith('Steerline demo against')) && rows.some((r) => r.includes('type a steer')), 'the running status line');
    await tmux('send-keys', '-t', 'demo', '-l', 'please also update');
    const before = await rowsOf((rows) => rows.at(-1) === 'steer> please also update', 'the typed text on the input line');
    // Events keep coming while the person types: the status line changes, the input line does not.
    const after = await rowsOf((rows) => rows.at(-2) !== before.at(-2) && rows.at(-1) === 'steer> please also update', 'a status redraw around the typed text');
    // The status line: the turn's tally, or (live output) the answer being written or a running tool's bar.
    expect(after.at(-2)).toMatch(/^\[running\] step \d · steers queued \d · delivered \d · dropped \d · \d+ events$|^\[(writing|tool)\] /);

    await tmux('resize-window', '-t', 'demo', '-x', '30', '-y', '12');
    await tmux('send-keys', '-t', 'demo', '-l', ' the changelog');
    const narrow = await rowsOf((rows) => rows.length === 12 && rows.at(-1) === 'steer> … update the changelog', 'the input line cut to the narrow width');
    expect(narrow.every((r) => [...r].length <= 30)).toBe(true);
    expect(narrow.at(-2)).toMatch(/^\[(running|writing|tool)\] .*…$/);
    // Typed text shows nowhere but the input line.
    expect(narrow.slice(0, -1).filter((r) => r.includes('changelog'))).toEqual([]);

    await tmux('send-keys', '-t', 'demo', 'Enter');
    await rowsOf((rows) => rows.at(-1) === 'steer>' && rows.some((r) => r.includes('you: "please')), 'the sent steer in the log');
    // The typed steer's receipt is on the screen, and the log settles it: delivered into the turn it was typed for.
    // (The plain run above follows a demo to its end and its transcript.)
    await eventually(async () => {
      last = (await tmux('capture-pane', '-p', '-J', '-S', '-', '-t', 'demo')).split('\n');
      return /receipt for "please also update the changelog" \(yours\): (queued|delivered)/.test(last.join('\n')) || undefined;
    }, 30_000, 'the typed steer’s receipt').catch((err: Error) => {
      throw new Error(`${err.message}; the screen:\n${last.join('\n')}`);
    });
    const delivered = await eventually(async () => {
      const log = await stack.nats.readAll();
      const queued = log.find((e) => e.event.type === 'SteerQueued' && e.event.data.text === 'please also update the changelog');
      return queued && log.find((e) => e.event.type === 'SteeringDelivered' && e.event.data.steerId === (queued.event.data as { steerId: string }).steerId);
    }, 30_000, 'the typed steer to be delivered');
    expect(delivered.event.turnId).toBe((await stack.nats.readAll()).find((e) => e.event.type === 'TurnStarted')!.event.turnId);
  }, 90_000);
});

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { timeout: 10_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${command} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout))),
  );
}

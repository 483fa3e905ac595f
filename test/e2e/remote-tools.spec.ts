import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import readline from 'node:readline';
import { checkInvariants } from '@steerline/contracts';
import { type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

const ENTRY = join(__dirname, '../../dist/examples/tool-service/main.js');

/** The example tool service, run as its own process from dist/ as a user would run it. */
class ExampleToolService {
  readonly lines: Record<string, unknown>[] = [];
  private readonly child: ChildProcess;
  readonly exited: Promise<unknown>;

  constructor(env: Record<string, string>) {
    if (!existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run \`npm run build\` (npm test does)`);
    this.child = spawn(process.execPath, [ENTRY], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => this.lines.push(JSON.parse(line)));
  }

  said(fields: Record<string, unknown>, timeoutMs = 10_000) {
    const matches = (l: Record<string, unknown>) => Object.entries(fields).every(([k, v]) => l[k] === v);
    return eventually(() => this.lines.find(matches), timeoutMs, `the tool service to print ${JSON.stringify(fields)}`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
  }
}

type Step = Record<string, unknown>;
const call = (name: string, args: Record<string, unknown>): Step => ({ tool: { name, args } });

describe('tools served by another process over NATS', () => {
  let stack: Stack;
  let service: ExampleToolService;
  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_TOOL_TIMEOUT_MS: '1500' } });
    service = new ExampleToolService(stack.env);
    await service.said({ event: 'ready' }, 15_000);
    // The service announces itself at start; the engine offers its tools from then on.
    await eventually(() => stack.engine.service.remoteTools?.has('slow_echo') || undefined, 20_000, 'the engine to learn the remote tools');
  });
  afterAll(async () => {
    await service?.stop();
    await stack?.close();
  });

  async function startTurn(script: Step[]) {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'use the tools', model: { provider: 'scripted', script } });
    expect(res.status).toBe(202);
    return res.body.turnId as string;
  }
  const ended = (tid: string) => stack.turnEnded(tid);
  const finishedCall = (events: StoredEvent[]) => events.find((e) => e.event.type === 'ToolCallFinished')!.event.data;

  it('a tool served by a separate process is offered to the model with its JSON Schema, and a turn calls it', async () => {
    const tid = await startTurn([call('word_count', { text: 'one two  three' }), { text: 'counted' }]);
    const events = await ended(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'counted' } });
    expect(finishedCall(events)).toMatchObject({ name: 'word_count', ok: true, output: { words: 3 } });
    await service.said({ event: 'call', tool: 'word_count', turnId: tid });

    const request = stack.model.requests.find((r) => r.messages[0]?.turnId === tid)!;
    expect(request.tools).toContainEqual({
      name: 'word_count',
      description: 'Counts the words of a text.',
      parameters: { type: 'object', properties: { text: { type: 'string', description: 'The text to count.' } }, required: ['text'], additionalProperties: false },
    });
    expect(request.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['sleep', 'echo', 'fail', 'word_count', 'slow_echo']));
    expect(checkInvariants(events, { requireSettled: true })).toEqual([]);
  });

  it('an error the tool service answers with reaches the model as an error tool result, and the turn goes on', async () => {
    const tid = await startTurn([call('word_count', { text: 42 }), { text: 'recovered' }]);
    const events = await ended(tid);
    expect(finishedCall(events)).toMatchObject({ ok: false, error: { code: 'invalid_arguments', message: 'text must be a string' } });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'recovered' } });
    const step2 = stack.model.requests.find((r) => r.messages[0]?.turnId === tid && r.step === 2)!;
    expect(step2.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Error: text must be a string' });
  });

  it('cancelling the turn sends the running remote tool a cancel message', async () => {
    const tid = await startTurn([call('slow_echo', { text: 'late', ms: 30_000 })]);
    const started = await service.said({ event: 'call', tool: 'slow_echo', turnId: tid });
    expect((await stack.api('POST', `/turns/${tid}/cancel`)).status).toBe(202);
    await service.said({ event: 'cancelled', callId: started.callId, turnId: tid }, 10_000);
    const events = await ended(tid);
    expect(events.at(-1)!.event.type).toBe('TurnCancelled');
    expect(events.some((e) => e.event.type === 'ToolCallFinished')).toBe(false);
  });

  it('a call that outlives the tool timeout becomes an error result the model sees, and the service is told to stop', async () => {
    const tid = await startTurn([call('slow_echo', { text: 'too slow', ms: 20_000 }), { text: 'moved on' }]);
    const events = await ended(tid);
    expect(finishedCall(events)).toMatchObject({ ok: false, error: { code: 'tool_timeout' } });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'moved on' } });
    await service.said({ event: 'cancelled', turnId: tid, reason: 'timeout' }, 10_000);
  });

  it('when the tool service is down, the call becomes an error tool result and the turn goes on', async () => {
    await service.stop();
    const tid = await startTurn([call('word_count', { text: 'anyone there' }), { text: 'carried on without it' }]);
    const events = await ended(tid);
    expect(finishedCall(events)).toMatchObject({ ok: false, error: { code: 'tool_unavailable', message: 'no service answers tool word_count' } });
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'carried on without it' } });
    expect(checkInvariants(events, { requireSettled: true })).toEqual([]);
  });
});

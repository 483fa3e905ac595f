import { serveTools, type ToolServer } from '@steerline/runtime';
import type { ModelAnswer, ModelProvider, ModelRequest } from '../../apps/engine/src/models/model.provider';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

const MARKER_5MB = '… [truncated: 5 242 880 bytes, limit 262 144]';
const FIVE_MB = 5 * 1024 * 1024;

/**
 * Answers by the turn's prompt: "big answer" writes 5 MB of text; "big args"
 * waits for `release` and then calls a tool with arguments no event can hold;
 * anything else goes to the stack's scripted model.
 */
class OversizedModel implements ModelProvider {
  release!: () => void;
  private gate = new Promise<void>((r) => (this.release = r));
  waiting = false;
  constructor(private readonly inner: ModelProvider) {}

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelAnswer> {
    const prompt = request.messages.find((m) => m.role === 'user')?.content;
    if (prompt === 'big answer' && request.step === 1) return { text: 'é'.repeat(FIVE_MB / 2), toolCalls: [] };
    if (prompt === 'big args' && request.step === 1) {
      this.waiting = true;
      await this.gate;
      return { text: '', toolCalls: [{ id: 'call_1_0', name: 'echo', args: { text: 'x'.repeat(2 * 1024 * 1024) } }] };
    }
    return this.inner.complete(request, signal);
  }
}

describe('big outputs have a bound the model sees', () => {
  let stack: Stack;
  let tools: ToolServer;
  let model: OversizedModel;

  beforeAll(async () => {
    stack = await startStack();
    model = new OversizedModel(stack.model);
    stack.engine.service.models.register('scripted', model);
    tools = serveTools(stack.nats.nc, stack.prefix, 'dumper', [{ descriptor: { name: 'dump', description: 'Returns 5 MB.' }, run: () => 'd'.repeat(FIVE_MB) }]);
    await tools.ready;
    await eventually(() => stack.engine.service.remoteTools?.has('dump') || undefined, 20_000, 'the engine to learn the remote tool');
  });
  afterAll(async () => {
    tools?.stop();
    await stack?.close();
  });

  async function startTurn(prompt: string, script: unknown[] = []): Promise<string> {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt, model: { provider: 'scripted', script }, limits: { maxQueued: 10 } });
    expect(res.status).toBe(202);
    return res.body.turnId;
  }

  it('a remote tool returning 5 MB reaches the model and the log cut at the limit, and the turn goes on', async () => {
    const tid = await startTurn('use dump', [{ tool: { name: 'dump', args: {} } }, { text: 'read the cut output' }]);
    const events = await stack.turnEnded(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'read the cut output' } });
    const finished = events.find((e) => e.event.type === 'ToolCallFinished')!.event.data as { ok: boolean; output: string };
    expect(finished.ok).toBe(true);
    expect(finished.output.endsWith(MARKER_5MB)).toBe(true);
    expect(Buffer.byteLength(finished.output)).toBeLessThanOrEqual(262_144);
    // Write-ahead: the model was shown exactly what the log holds.
    const second = stack.model.requests.find((r) => r.step === 2 && r.messages.some((m) => m.turnId === tid))!;
    expect(second.messages.find((m) => m.role === 'tool')?.content).toBe(finished.output);
  });

  it('a 5 MB model answer is cut at the limit, UTF-8 safe, in the log and the read model', async () => {
    const tid = await startTurn('big answer');
    const events = await stack.turnEnded(tid);
    const answered = events.find((e) => e.event.type === 'ModelResponded')!.event.data as { text: string };
    expect(answered.text.endsWith(MARKER_5MB)).toBe(true);
    expect(answered.text.slice(0, 10)).toBe('é'.repeat(10));
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: answered.text } });
    await stack.settled();
    const turn = await stack.api('GET', `/turns/${tid}`);
    expect(turn.status).toBe(200);
    expect(turn.body.text).toBe(answered.text);
  });

  it('an answer no event can hold fails its turn honestly: queued steers dropped turn_failed, nothing left hanging', async () => {
    const tid = await startTurn('big args');
    await eventually(() => model.waiting || undefined, 20_000, 'the model to be asked');
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'also check the logs' }, { prefer: 'wait=0' });
    expect(steer.status).toBe(202);
    model.release();
    const events = await stack.turnEnded(tid);
    expect(events.map((e) => e.event.type)).toEqual(['TurnStarted', 'ModelRequested', 'SteerQueued', 'SteerDropped', 'TurnFailed']);
    expect(events[3].event.data).toMatchObject({ steerId: steer.body.steerId, reason: 'turn_failed' });
    expect(events[4].event.data).toMatchObject({ error: { code: 'payload_too_large' } });
    // The engine goes on serving.
    const next = await startTurn('after', [{ text: 'fine' }]);
    expect((await stack.turnEnded(next)).at(-1)!.event.type).toBe('TurnCompleted');
  });
});

import type { Msg, Subscription } from '@nats-io/transport-node';
import { INTERRUPTED_MARKER, checkInvariants, toolSubjects, type ModelDelta, type ToolServiceDescription } from '@steerline/contracts';
import { decodeJson, encodeJson, type StoredEvent } from '@steerline/runtime';
import { eventually } from '../support/env';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { McpScratch } from '../support/mcp/mcp-servers';
import { approvalRequested, startStack, type Stack } from '../support/stack';

type Step = Record<string, unknown>;
const call = (name: string, args: Record<string, unknown> = {}): Step => ({ tool: { name, args } });

/**
 * A tool service of the test's own over real NATS: `hold` (interruptible) and
 * `hold_firm` (`interruptible: false`) answer only when the test releases the
 * call; cancels are recorded (docs/design.md §6.2).
 */
class HoldingTools {
  readonly calls = new Map<string, Msg>();
  readonly cancels: string[] = [];
  private readonly subs: Subscription[] = [];
  constructor(private readonly stack: Stack) {
    const ts = toolSubjects(stack.prefix);
    const description: ToolServiceDescription = {
      service: 'holding',
      tools: [
        { name: 'hold', description: 'waits until released', parameters: { type: 'object', properties: {} } },
        { name: 'hold_firm', description: 'waits until released; never cut', parameters: { type: 'object', properties: {} }, interruptible: false },
      ],
    };
    const nc = stack.nats.nc;
    for (const name of ['hold', 'hold_firm']) {
      this.subs.push(nc.subscribe(ts.call(name), { queue: ts.queue(name), callback: (_e, msg) => void this.calls.set((decodeJson(msg.data) as { toolCallId: string }).toolCallId, msg) }));
      this.subs.push(nc.subscribe(ts.cancel(name), { callback: (_e, msg) => void this.cancels.push((decodeJson(msg.data) as { callId: string }).callId) }));
    }
    this.subs.push(nc.subscribe(ts.describe, { callback: (_e, msg) => void msg.respond(encodeJson(description)) }));
    nc.publish(ts.announce, encodeJson(description));
  }
  held(toolCallId: string) {
    return eventually(() => this.calls.get(toolCallId), 15_000, `the tool service to hold ${toolCallId}`);
  }
  release(toolCallId: string, output: unknown) {
    this.calls.get(toolCallId)!.respond(encodeJson({ ok: true, output }));
  }
  close() {
    for (const s of this.subs) s.unsubscribe();
  }
}

/** docs/design.md §2, "Urgency": `urgency: "interrupt"` stops what the turn does, then delivers, on real NATS and PostgreSQL. */
describe('an urgent steer interrupts the turn', () => {
  const scratch = new McpScratch();
  let stack: Stack;
  let openai: FakeOpenAI;
  let tools: HoldingTools;
  const deltas: ModelDelta[] = [];

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    const config = scratch.writeConfig({ files: scratch.stdioEntry('files') });
    stack = await startStack({ env: { OPENAI_BASE_URL: openai.baseUrl, OPENAI_API_KEY: 'sk-test', STEERLINE_MCP_CONFIG: config, STEERLINE_TOOL_TIMEOUT_MS: '120000' } });
    tools = new HoldingTools(stack);
    stack.nats.nc.subscribe(`${stack.prefix}.live.>`, {
      callback: (_err, msg) => {
        const m = decodeJson(msg.data) as ModelDelta;
        if (m.type === 'ModelDelta') deltas.push(m);
      },
    });
    await eventually(() => stack.engine.service.remoteTools?.has('hold_firm') || undefined, 20_000, 'the engine to learn the holding tools');
  });
  afterAll(async () => {
    tools?.close();
    await stack?.close();
    await openai?.close();
    scratch.remove();
  });

  async function startTurn(model: unknown, approvals?: { tools: string[] }) {
    const cid = (await stack.api('POST', '/conversations')).body.id as string;
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'go', model, ...(approvals && { approvals }) });
    expect(res.status).toBe(202);
    return { cid, tid: res.body.turnId as string };
  }
  const scripted = (script: Step[]) => ({ provider: 'scripted', script });
  const interrupt = (tid: string, text: string, wait = 30) => stack.api('POST', `/turns/${tid}/steers`, { text, urgency: 'interrupt' }, wait ? { Prefer: `wait=${wait}` } : {});
  const types = (events: StoredEvent[]) => events.map((e) => e.event.type);
  const of = (events: StoredEvent[], type: string) => events.filter((e) => e.event.type === type).map((e) => e.event.data as Record<string, any>);
  const started = (tid: string, toolCallId: string) => stack.turnHas(tid, 'ToolCallStarted', { where: (d) => d.toolCallId === toolCallId });
  const audit = (events: StoredEvent[]) => expect(checkInvariants(events, { requireSettled: true })).toEqual([]);

  it('during a streamed answer: the stream is aborted, what it wrote is ModelInterrupted (never ModelResponded), and the next request carries it marked and the steer', async () => {
    const words = Array.from({ length: 200 }, (_, i) => `word${i} `).join('');
    openai.answer({ text: words, chunkDelayMs: 50 }, { text: 'redirected' });
    const before = openai.requests.length;
    const { tid } = await startTurn({ provider: 'openai', name: 'gpt-test' });
    await eventually(() => deltas.filter((d) => d.turnId === tid).length >= 3 || undefined, 20_000, 'some of the answer to stream');
    const res = await interrupt(tid, 'stop, summarise instead');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'delivered', boundary: 'interrupt', step: 1, requestStep: 2, urgency: 'interrupt' });
    const events = await stack.turnEnded(tid);
    expect(types(events)).toEqual(['TurnStarted', 'ModelRequested', 'SteerQueued', 'ModelInterrupted', 'SteeringDelivered', 'ModelRequested', 'ModelResponded', 'TurnCompleted']);
    const [cut] = of(events, 'ModelInterrupted');
    expect(cut.partialText.length).toBeGreaterThan(0);
    expect(words.startsWith(cut.partialText)).toBe(true);
    expect(cut.partialText.length).toBeLessThan(words.length);
    // What was published live is exactly what the record says was cut.
    expect(deltas.filter((d) => d.turnId === tid && d.step === 1).map((d) => d.text).join('')).toBe(cut.partialText);
    await eventually(() => openai.requests[before].abortedAt, 10_000, 'the first stream to be aborted');
    const next = openai.requests[before + 1].body.messages as { role: string; content: string }[];
    expect(next.slice(-2)).toEqual([
      { role: 'assistant', content: `${cut.partialText}\n\n${INTERRUPTED_MARKER}` },
      { role: 'user', content: 'stop, summarise instead' },
    ]);
    audit(events);
  });

  it('during a remote tool: the call is cancelled and gets an interrupted result; steers queued before are delivered first, FIFO', async () => {
    const { tid } = await startTurn(scripted([call('hold'), { text: 'ok' }]));
    await tools.held('call_1_0');
    const plain = await stack.api('POST', `/turns/${tid}/steers`, { text: 'plain first' });
    expect(plain.status).toBe(202);
    const res = await interrupt(tid, 'stop that call');
    expect(res.body).toMatchObject({ status: 'delivered', boundary: 'interrupt', position: 2 });
    const events = await stack.turnEnded(tid);
    expect(of(events, 'ToolCallFinished')).toEqual([expect.objectContaining({ toolCallId: 'call_1_0', ok: false, error: expect.objectContaining({ code: 'interrupted' }) })]);
    expect(of(events, 'SteeringDelivered').map((d) => [d.text, d.boundary])).toEqual([
      ['plain first', 'interrupt'],
      ['stop that call', 'interrupt'],
    ]);
    await eventually(() => tools.cancels.length > 0 || undefined, 10_000, 'the remote cancel');
    // The service answering after the cut changes nothing: the call has its one result.
    tools.release('call_1_0', 'too late');
    audit(await stack.turnEvents(tid));
  });

  it('during an MCP tool: the server gets notifications/cancelled; a destructive one is waited for and the receipt says so', async () => {
    const { tid } = await startTurn(scripted([call('mcp__files__slow', { ms: 60_000 }), { text: 'ok' }]));
    const onFiles = await scratch.saw('files', { event: 'call', tool: 'slow', args: { ms: 60_000 } });
    expect((await interrupt(tid, 'not that file')).body).toMatchObject({ status: 'delivered', boundary: 'interrupt' });
    await scratch.saw('files', { event: 'cancelled', requestId: onFiles.requestId });
    audit(await stack.turnEnded(tid));

    const firm = await startTurn(scripted([call('mcp__files__slow_destructive', { ms: 1500 }), { text: 'ok' }]));
    await started(firm.tid, 'call_1_0');
    const queued = await interrupt(firm.tid, 'after it, stop', 0);
    expect(queued.body).toMatchObject({ status: 'queued', urgency: 'interrupt', waitingFor: ['call_1_0'] });
    const events = await stack.turnEnded(firm.tid);
    expect(of(events, 'ToolCallFinished')[0]).toMatchObject({ ok: true, output: 'waited 1500 ms' });
    expect(of(events, 'SteeringDelivered')[0]).toMatchObject({ boundary: 'interrupt' });
    audit(events);
  });

  it('during an approval wait: the call is denied by the engine, reason interrupted — never approved (I7)', async () => {
    const { cid, tid } = await startTurn(scripted([call('sleep', { ms: 10 }), { text: 'ok' }]), { tools: ['sleep'] });
    await approvalRequested(stack, tid, 'call_1_0');
    // The conversation's steer route takes `urgency` too.
    const res = await stack.api('POST', `/conversations/${cid}/steers`, { text: 'no, do it differently', urgency: 'interrupt', expectedTurnId: tid }, { Prefer: 'wait=30' });
    expect(res.body).toMatchObject({ status: 'delivered', boundary: 'interrupt', turnId: tid });
    const events = await stack.turnEnded(tid);
    expect(of(events, 'ToolApprovalDecided')).toEqual([{ step: 1, toolCallId: 'call_1_0', decision: 'denied', reason: 'interrupted', by: 'cancel' }]);
    expect(types(events)).not.toContain('ToolCallStarted');
    const late = await stack.api('POST', `/turns/${tid}/approvals/call_1_0`, { decision: 'approve' });
    expect(late.status).not.toBe(200);
    audit(events);
  });

  it('against a non-interruptible tool, two interrupts in a row: one cut, both wait for it and are delivered at the same point', async () => {
    const { tid } = await startTurn(scripted([{ tools: [{ name: 'hold_firm', args: {} }, { name: 'hold', args: {} }] }, { text: 'ok' }]));
    await tools.held('call_1_0');
    await tools.held('call_1_1');
    const first = await interrupt(tid, 'first', 0);
    const second = await interrupt(tid, 'second', 0);
    expect(first.body).toMatchObject({ status: 'queued', waitingFor: ['call_1_0'] });
    expect(second.body).toMatchObject({ status: 'queued', waitingFor: ['call_1_0'] });
    const waiting = await stack.turnEvents(tid);
    expect(of(waiting, 'ToolCallFinished')).toEqual([expect.objectContaining({ toolCallId: 'call_1_1', error: expect.objectContaining({ code: 'interrupted' }) })]);
    tools.release('call_1_0', 'firm result');
    const events = await stack.turnEnded(tid);
    expect(of(events, 'ToolCallFinished').map((f) => [f.toolCallId, f.ok])).toEqual([
      ['call_1_1', false],
      ['call_1_0', true],
    ]);
    expect(of(events, 'SteeringDelivered').map((d) => [d.text, d.boundary, d.requestStep])).toEqual([
      ['first', 'interrupt', 2],
      ['second', 'interrupt', 2],
    ]);
    audit(events);
  });

  it('an unknown urgency is a 400 invalid_request, and nothing is appended', async () => {
    const { tid } = await startTurn(scripted([call('sleep', { ms: 10 }), { text: 'ok' }]), { tools: ['sleep'] });
    await approvalRequested(stack, tid, 'call_1_0');
    const res = await stack.api('POST', `/turns/${tid}/steers`, { text: 'now!', urgency: 'now' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(types(await stack.turnEvents(tid))).not.toContain('SteerQueued');
    expect((await stack.api('POST', `/turns/${tid}/cancel`, {})).status).toBe(202);
  });

  it('an interrupt racing the step’s natural end: either the answer was cut or it stands, never both, and the audit is clean', async () => {
    const outcomes = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const { tid } = await startTurn(scripted([{ text: 'a short answer of a few words', delayMs: 20 + i * 10 }]));
      await stack.turnHas(tid, 'ModelRequested');
      const res = await stack.api('POST', `/turns/${tid}/steers`, { text: `race ${i}`, urgency: 'interrupt' }, { Prefer: 'wait=30' });
      const events = await stack.turnEnded(tid);
      audit(events);
      const step1 = events.filter((e) => (e.event.type === 'ModelResponded' || e.event.type === 'ModelInterrupted') && (e.event.data as { step: number }).step === 1);
      expect(step1).toHaveLength(1);
      if (res.status === 200) {
        // Accepted while the turn ran: delivered at the cut, or at the text-only end it lost to.
        expect(res.body.boundary).toBe(step1[0].event.type === 'ModelInterrupted' ? 'interrupt' : 'turn_end');
        outcomes.add(res.body.boundary);
      } else {
        // The turn had completed first: nothing was accepted, nothing appended.
        expect(res.body.error.code).toBe('turn_not_running');
        expect(types(events)).not.toContain('SteerQueued');
        outcomes.add('too_late');
      }
    }
    expect(outcomes.size).toBeGreaterThan(0);
  });
});

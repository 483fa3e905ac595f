import { SteerlineClient } from '@steerline/client';
import { auditLog } from '@steerline/runtime';
import { adapterEnv, DriverTurns, type Driver } from '../support/adapter-drivers';
import type { RecordedRequest } from '../support/fake-openai';

/**
 * An urgent steer of a turn whose loop runs in the AI SDK or the Agents SDK (docs/runner-protocol.md,
 * "Interrupts"): the adapter's signal aborts the framework's step, the adapter reports what it had,
 * and the next model request carries what the cut left and the steer.
 */
const { env, drivers } = adapterEnv();

type Message = { role: string; content: unknown; tool_call_id?: string };
const messagesOf = (r: RecordedRequest) => r.body.messages as Message[];
const urgent = (tid: string, text: string) => env.stack.api('POST', `/turns/${tid}/steers`, { text, urgency: 'interrupt' }, { Prefer: 'wait=0' });
async function audit(cid: string) {
  const report = await auditLog(env.stack.nats.js, env.stack.nats.jsm, env.stack.nats.s, { tenantId: 'default', conversationId: cid, requireSettled: true });
  expect(report.violations).toEqual([]);
}

describe.each(drivers)('$name', (driver: Driver) => {
  const turns = new DriverTurns(env, driver);

  it('during a tool call: the call is aborted and ends interrupted, the steer follows it at `interrupt`, and the loop goes on', async () => {
    const { cid, tid } = await turns.start([{ toolCalls: [{ id: 'c1', name: 'wait', args: {} }] }, { text: 'redirected' }]);
    await env.stack.turnHas(tid, 'ToolCallStarted', { where: (d) => d.toolCallId === 'c1' });
    expect((await urgent(tid, 'stop waiting')).body).toMatchObject({ status: 'queued', urgency: 'interrupt', waitingFor: ['c1'] });
    expect(await turns.turn.done).toBe('redirected');
    const events = await env.stack.turnEnded(tid);
    expect(events.filter((e) => e.event.type === 'ToolCallFinished').map((e) => e.event.data)).toEqual([expect.objectContaining({ toolCallId: 'c1', ok: false, error: expect.objectContaining({ code: 'interrupted' }) })]);
    expect(events.find((e) => e.event.type === 'SteeringDelivered')!.event.data).toMatchObject({ boundary: 'interrupt', step: 1, requestStep: 2 });
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    const requests = turns.requests();
    expect(requests).toHaveLength(2);
    const last = messagesOf(requests[1]);
    expect(last.slice(-2)).toEqual([expect.objectContaining({ role: 'tool', tool_call_id: 'c1' }), { role: 'user', content: 'stop waiting' }]);
    expect(JSON.stringify(last.at(-2)!.content)).toContain('interrupted');
    await audit(cid);
  });

  it('during a model call: the request is aborted, the answer is recorded as interrupted (never an answer), and the model is asked again with the steer', async () => {
    const { cid, tid } = await turns.start([{ hang: true }, { text: 'as you wish' }]);
    const fake = env.fake;
    const from = fake.requests.length;
    await eventuallyRequests(() => fake.requests.length >= from);
    expect((await urgent(tid, 'different plan')).body).toMatchObject({ status: 'queued', urgency: 'interrupt' });
    expect(await turns.turn.done).toBe('as you wish');
    const events = await env.stack.turnEnded(tid);
    expect(events.find((e) => e.event.type === 'ModelInterrupted')!.event.data).toEqual({ step: 1, partialText: '' });
    expect(events.filter((e) => e.event.type === 'ModelResponded').map((e) => (e.event.data as { step: number }).step)).toEqual([2]);
    const requests = turns.requests();
    expect(requests).toHaveLength(2);
    expect(requests[0].abortedAt).toBeDefined();
    expect(messagesOf(requests[1]).at(-1)).toEqual({ role: 'user', content: 'different plan' });
    expect(messagesOf(requests[1]).filter((m) => m.role === 'assistant')).toEqual([]);
    await audit(cid);
  });
});

it('streamText: the text streamed before the cut is recorded as ModelInterrupted and read next as a marked fragment, not as an answer', async () => {
  const streaming = drivers.find((d) => d.name.includes('streamText'))!;
  const turns = new DriverTurns(env, streaming);
  const client = new SteerlineClient({ baseUrl: env.stack.url });
  // Slow chunks, then silence: the watcher (which joins after the start) sees the answer being written.
  const { cid, tid } = await turns.start([{ text: 'I will now delete every file in the folder', chunkDelayMs: 200, stallAfter: 4 }, { text: 'kept them' }]);
  const watcher = new AbortController();
  let seen = '';
  for await (const m of client.events(cid, { live: true, signal: watcher.signal })) {
    if ('live' in m && m.type === 'ModelDelta') seen += (m.message as { text: string }).text;
    if (seen.length > 0) break;
  }
  watcher.abort();
  await urgent(tid, 'do not delete anything');
  expect(await turns.turn.done).toBe('kept them');
  const events = await env.stack.turnEnded(tid);
  const cut = events.find((e) => e.event.type === 'ModelInterrupted')!.event.data as { step: number; partialText: string };
  expect(cut.step).toBe(1);
  expect(cut.partialText.length).toBeGreaterThan(0);
  expect('I will now delete every file in the folder'.startsWith(cut.partialText)).toBe(true);
  expect(cut.partialText).toContain(seen);
  const next = messagesOf(turns.requests()[1]);
  expect(next.slice(-2)).toEqual([
    { role: 'assistant', content: expect.stringMatching(new RegExp(`^${cut.partialText}\\n\\n\\[interrupted: `)) },
    { role: 'user', content: 'do not delete anything' },
  ]);
  await audit(cid);
});

async function eventuallyRequests(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('the model request never came');
    await new Promise((r) => setTimeout(r, 10));
  }
}

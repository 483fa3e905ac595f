import type { Relayed } from './prism';

export type Send = (method: string, path: string, init?: { body?: unknown; headers?: Record<string, string> }) => Promise<Relayed>;

const json = (r: Relayed) => (r.text ? JSON.parse(r.text) : undefined);
const call = { id: 'call_1_0', name: 'sleep', args: { ms: 10 } };

/**
 * An external turn (docs/runner-protocol.md) driven over HTTP as a runner
 * would, every request through `send`: it reaches each runner route with its
 * answers (RunnerNext of each kind, a pending and an approved decision, a
 * lease renewal, a live publish, an urgent steer's stop) and its refusals (403 a token that is not the
 * lease, 404 another tenant, 400 a bad body, 409 a report after the end). A
 * steer sent while the runner holds step 1 is the one the results answer
 * hands it for step 2. Throws on any answer that is not the expected one.
 */
export async function runExternalTurnSession(send: Send, otherTenant: string): Promise<void> {
  const answered = async (answer: Promise<Relayed>, status: number, what: string) => {
    const r = await answer;
    if (r.status !== status) throw new Error(`${what}: ${r.method} ${r.path} answered ${r.status}, not ${status}: ${r.text}`);
    return json(r);
  };
  const cid = (await answered(send('POST', '/v1/conversations', { body: {} }), 201, 'conversation')).id as string;
  const started = await answered(send('POST', `/v1/conversations/${cid}/turns`, { body: { prompt: 'Refactor the parser', runner: 'external', approvals: { tools: ['sleep'] } } }), 202, 'external start');
  const turnId = started.turnId as string;
  const lease = started.lease.token as string;
  const runner = (verb: string, body: Record<string, unknown>, headers?: Record<string, string>) => send('POST', `/v1/turns/${turnId}/runner/${verb}`, { body: { lease, ...body }, headers });

  const renewed = await answered(runner('lease', { waitMs: 0 }), 200, 'lease renewal');
  if (renewed.turn.next !== 'running') throw new Error(`the turn is not running: ${JSON.stringify(renewed)}`);
  const tools = await answered(runner('answer', { step: 1, text: '', toolCalls: [call], usage: { inputTokens: 12, outputTokens: 3 } }), 200, 'answer');
  if (tools.next !== 'tools' || tools.calls[0]?.approval !== 'pending') throw new Error(`the call does not wait for approval: ${JSON.stringify(tools)}`);

  // The runner holds step 1 (its call waits for a person): a steer sent now is delivered with its results.
  const steer = await answered(send('POST', `/v1/turns/${turnId}/steers`, { body: { text: 'Keep the public API' } }), 202, 'steer');
  const pending = await answered(runner(`approvals/${call.id}`, { waitMs: 0 }), 200, 'approval wait');
  if (pending.decision !== 'pending') throw new Error(`the call was decided already: ${JSON.stringify(pending)}`);
  await answered(send('POST', `/v1/turns/${turnId}/approvals/${call.id}`, { body: { decision: 'approve' } }), 200, 'approve');
  const approved = await answered(runner(`approvals/${call.id}`, { waitMs: 5_000 }), 200, 'approval decision');
  if (approved.decision !== 'approved') throw new Error(`the call was not approved: ${JSON.stringify(approved)}`);
  const live = [
    { type: 'ToolProgress', step: 1, toolCallId: call.id, progress: 0.5, message: 'half way' },
    { type: 'ModelDelta', step: 2, text: 'Kept' },
  ];
  await answered(runner('live', { messages: live }), 200, 'live');
  const next = await answered(runner('results', { step: 1, results: [{ toolCallId: call.id, ok: true, output: 'slept 10 ms', durationMs: 10 }] }), 200, 'results');
  if (next.next !== 'model' || next.step !== 2 || next.steers[0]?.steerId !== steer.steerId) throw new Error(`the steer did not reach the runner: ${JSON.stringify(next)}`);

  // An urgent steer while the runner's model writes step 2: the lease answer asks it to stop, its report is cut and answered with the steer.
  await answered(send('POST', `/v1/turns/${turnId}/steers`, { body: { text: 'Stop, keep it small', urgency: 'interrupt' } }), 202, 'urgent steer');
  const asked = await answered(runner('lease', { waitMs: 5_000 }), 200, 'lease renewal asking for a stop');
  if (asked.interrupt?.step !== 2) throw new Error(`the renewal did not ask to stop step 2: ${JSON.stringify(asked)}`);
  const cut = await answered(runner('interrupted', { step: 2, partialText: 'Kept' }), 200, 'interrupted');
  if (cut.next !== 'model' || cut.step !== 3 || cut.cut?.step !== 2 || !cut.cut.text?.startsWith('Kept')) throw new Error(`the cut did not reach the runner: ${JSON.stringify(cut)}`);

  // Refusals of a running turn: nothing is decided.
  await answered(runner('answer', { lease: 'A'.repeat(43), step: 2, text: 'not mine', toolCalls: [] }), 403, 'a token that is not the lease');
  await answered(runner('lease', {}, { Authorization: otherTenant }), 404, 'another tenant’s turn');
  await answered(runner('live', { messages: [{ type: 'ModelDelta', step: 0, text: '' }] }), 400, 'a bad body');

  const ended = await answered(runner('fail', { code: 'agent_crashed', message: 'the agent threw' }), 200, 'fail');
  if (ended.next !== 'end' || ended.status !== 'failed') throw new Error(`the turn did not fail: ${JSON.stringify(ended)}`);
  await answered(runner('results', { step: 2, results: [] }), 409, 'a report for an ended turn');
}

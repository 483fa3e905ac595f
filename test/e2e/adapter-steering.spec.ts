import { auditLog, type StoredEvent } from '@steerline/runtime';
import { uuidv7 } from '@steerline/contracts';
import { adapterEnv, DriverTurns, type Driver } from '../support/adapter-drivers';
import { eventually } from '../support/env';
import type { RecordedRequest } from '../support/fake-openai';
import { steerSafely } from '../support/stack';

/**
 * The steering rules (test/e2e/steering-rules.spec.ts) on external turns that
 * the adapters drive: the real AI SDK (generateText, streamText) and the real
 * Agents SDK, calling the fake OpenAI-compatible server over HTTP. A turn is held
 * in its step by a tool call that waits at a gate until the test has seen what it
 * must (its steer queued), never by a sleep.
 */
const { env, gates, drivers } = adapterEnv();

const hold = (id: string, gate = id) => ({ toolCalls: [{ id, name: 'hold', args: { gate } }] });
const userTexts = (r: RecordedRequest) => (r.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'user').map((m) => m.content);
const settlementsOf = (events: StoredEvent[], steerId: string) =>
  events.filter((e) => (e.event.type === 'SteeringDelivered' || e.event.type === 'SteerDropped') && e.event.data.steerId === steerId);

describe.each(drivers)('the steering rules on an external turn driven by $name', (driver: Driver) => {
  const turns = new DriverTurns(env, driver);
  const start = turns.start.bind(turns);
  const requests = () => turns.requests();
  const steer = (tid: string, text: string, extra: Record<string, unknown> = {}, wait = 0) =>
    env.stack.api('POST', `/turns/${tid}/steers`, { text, ...extra }, wait ? { Prefer: `wait=${wait}` } : {});
  const queued = (tid: string, text: string) => env.stack.turnHas(tid, 'SteerQueued', { where: (d) => d.text === text });
  const gate = () => `${driver.name}:${uuidv7()}`;

  it('one steer over the queue cap gets 429 queue_full and appends nothing; the two queued reach the next request in order', async () => {
    const g = gate();
    const { tid } = await start([hold('c1', g), { text: 'done' }], { limits: { maxQueued: 2 } });
    await gates.entered(g);
    expect((await steer(tid, 'one')).status).toBe(202);
    expect((await steer(tid, 'two')).status).toBe(202);
    const full = await steer(tid, 'three');
    expect(full.status).toBe(429);
    expect(full.body.error.code).toBe('queue_full');
    gates.release(g);
    expect(await turns.turn.done).toBe('done');
    const events = await env.stack.turnEnded(tid);
    expect(events.filter((e) => e.event.type === 'SteerQueued')).toHaveLength(2);
    // FIFO: each its own user message after step 1's tool result, in the order they were queued.
    expect(requests()).toHaveLength(2);
    expect(userTexts(requests()[1]).slice(-2)).toEqual(['one', 'two']);
    expect(requests()[1].body.messages.at(-3)).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
    expect(events.flatMap((e) => (e.event.type === 'SteeringDelivered' ? [[e.event.data.text, e.event.data.position, e.event.data.requestStep]] : []))).toEqual([
      ['one', 1, 2],
      ['two', 2, 2],
    ]);
  });

  it('a queued steer is withdrawn with its text handed back; a delivered one answers 409 already_delivered', async () => {
    const [g1, g2] = [gate(), gate()];
    const { tid } = await start([hold('c1', g1), hold('c2', g2), { text: 'done' }]);
    await gates.entered(g1);
    const withdrawnLater = await steer(tid, 'forget this');
    const withdrawn = await env.stack.api('DELETE', `/turns/${tid}/steers/${withdrawnLater.body.steerId}`);
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body).toMatchObject({ status: 'dropped', reason: 'withdrawn', text: 'forget this', position: 1 });
    const kept = steer(tid, 'keep this', {}, 30);
    await queued(tid, 'keep this');
    gates.release(g1);
    expect((await kept).body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2 });
    // Step 2's call holds the turn: it is running when the late withdrawal comes.
    await gates.entered(g2);
    const late = await env.stack.api('DELETE', `/turns/${tid}/steers/${(await kept).body.steerId}`);
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('already_delivered');
    gates.release(g2);
    await turns.turn.done;
    const events = await env.stack.turnEnded(tid);
    expect(settlementsOf(events, withdrawnLater.body.steerId).map((e) => e.event.type)).toEqual(['SteerDropped']);
    expect(requests().flatMap(userTexts)).not.toContain('forget this');
    expect(userTexts(requests()[2])).toContain('keep this');
  });

  it('an edited steer reaches the model with its new text at its place', async () => {
    const g = gate();
    const { tid } = await start([hold('c1', g), { text: 'done' }]);
    await gates.entered(g);
    const first = await steer(tid, 'use tabs');
    expect((await steer(tid, 'and tests')).status).toBe(202);
    const edited = await env.stack.api('PATCH', `/turns/${tid}/steers/${first.body.steerId}`, { text: 'use spaces' });
    expect(edited.body).toMatchObject({ status: 'queued', text: 'use spaces', position: 1 });
    gates.release(g);
    await turns.turn.done;
    expect(userTexts(requests()[1]).slice(-2)).toEqual(['use spaces', 'and tests']);
    await env.stack.turnEnded(tid);
    await env.stack.settled();
    const receipt = await env.stack.api('GET', `/turns/${tid}/steers/${first.body.steerId}`);
    expect(receipt.body).toMatchObject({ status: 'delivered', text: 'use spaces', position: 1 });
  });

  it('steers queued at a text-only answer continue the turn (run calls the agent again); past maxContinuations they drop continuation_cap', async () => {
    let answer1!: () => void;
    let answer2!: () => void;
    const { tid } = await start(
      [
        { text: 'first answer', until: new Promise<void>((r) => (answer1 = r)) },
        { text: 'second answer', until: new Promise<void>((r) => (answer2 = r)) },
      ],
      { limits: { maxContinuations: 1 } },
    );
    // Each steer is sent while its model call is open, and queued before the call answers.
    await eventually(async () => requests().length === 1 || undefined, 10_000, 'the first model call');
    const a = steer(tid, 'also check the docs', {}, 30);
    await queued(tid, 'also check the docs');
    answer1();
    expect((await a).body).toMatchObject({ status: 'delivered', boundary: 'turn_end', step: 1, requestStep: 2 });
    await eventually(async () => requests().length === 2 || undefined, 10_000, 'the continuation’s model call');
    const b = steer(tid, 'and the changelog', {}, 30);
    await queued(tid, 'and the changelog');
    answer2();
    expect((await b).body.error).toMatchObject({ code: 'steer_dropped', reason: 'continuation_cap', text: 'and the changelog' });
    expect(await turns.turn.done).toBe('second answer');
    // The continuation's request: the conversation so far, the first answer, then the steer.
    const messages = requests()[1].body.messages as { role: string; content: unknown }[];
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'also check the docs' });
    // (The Agents SDK sends an assistant message's text as content parts.)
    expect(messages.at(-2)).toMatchObject({ role: 'assistant' });
    expect(JSON.stringify(messages.at(-2)!.content)).toContain('first answer');
    const events = await env.stack.turnEnded(tid);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'second answer' } });
  });

  it('a conversation steer reaches the running turn; a stale expectedTurnId gets 409 turn_moved_on; after the end 409 turn_not_running', async () => {
    const g = gate();
    const { cid, tid } = await start([hold('c1', g), { text: 'done' }]);
    await gates.entered(g);
    const ok = await env.stack.api('POST', `/conversations/${cid}/steers`, { text: 'by conversation', expectedTurnId: tid });
    expect(ok.status).toBe(202);
    expect(ok.body.turnId).toBe(tid);
    const moved = await env.stack.api('POST', `/conversations/${cid}/steers`, { text: 'wrong turn', expectedTurnId: uuidv7() });
    expect(moved.status).toBe(409);
    expect(moved.body.error.code).toBe('turn_moved_on');
    gates.release(g);
    await turns.turn.done;
    await env.stack.turnEnded(tid);
    expect(userTexts(requests()[1])).toContain('by conversation');
    const idle = await env.stack.api('POST', `/conversations/${cid}/steers`, { text: 'nobody runs' });
    expect(idle.status).toBe(409);
    expect(idle.body.error.code).toBe('turn_not_running');
  });

  it('a steer whose ttlMs passes while the step runs is dropped expired, text handed back, and never reaches the model', async () => {
    const g = gate();
    const { tid } = await start([hold('c1', g), { text: 'done' }]);
    await gates.entered(g);
    const short = await steer(tid, 'only if quick', { ttlMs: 1000 });
    expect(short.status).toBe(202);
    await env.stack.turnHas(tid, 'SteerDropped', { where: (d) => d.steerId === short.body.steerId && d.reason === 'expired' });
    gates.release(g);
    await turns.turn.done;
    await env.stack.turnEnded(tid);
    await env.stack.settled();
    const receipt = await env.stack.api('GET', `/turns/${tid}/steers/${short.body.steerId}`);
    expect(receipt.status).toBe(409);
    expect(receipt.body.error).toMatchObject({ code: 'steer_dropped', reason: 'expired', text: 'only if quick' });
    expect(requests().flatMap(userTexts)).not.toContain('only if quick');
  });

  it('steers fired across the moment the turn ends each get exactly one receipt, or an error and nothing in the log', async () => {
    // The first model call answers once the first shots are in: the turn surely runs while they come.
    let shotsIn!: () => void;
    const first = { toolCalls: [{ id: 'c1', name: 'echo', args: { text: 'a' } }], until: new Promise<void>((r) => (shotsIn = r)) };
    const { cid, tid } = await start([first, { text: 'end' }], { limits: { maxQueued: 1000, maxContinuations: 0 } });
    let over = false;
    const end = turns.turn.done.finally(() => (over = true));
    const shots: ReturnType<typeof steerSafely>[] = [];
    // Shots in batches of four until the turn is over, then one more batch.
    for (let after = 0; after < 2; after += over ? 1 : 0) {
      const batch = [0, 1, 2, 3].map(() => steerSafely(env.stack, tid, `race ${shots.length}`, uuidv7()));
      shots.push(...batch);
      await Promise.all(batch);
      shotsIn();
    }
    const results = await Promise.all(shots);
    await end;
    const events = await env.stack.turnEnded(tid);
    for (const { steerId, res } of results) {
      if (res.status >= 200 && res.status < 300) expect(settlementsOf(events, steerId)).toHaveLength(1);
      else {
        expect(res.status).toBe(409);
        expect(events.some((e) => JSON.stringify(e.event.data).includes(steerId))).toBe(false);
      }
    }
    expect(results.some((r) => r.res.status === 202)).toBe(true);
    expect(results.some((r) => r.res.status === 409)).toBe(true);
    const report = await auditLog(env.stack.nats.js, env.stack.nats.jsm, env.stack.nats.s, { tenantId: 'default', conversationId: cid, requireSettled: true });
    expect(report.violations).toEqual([]);
  });
});

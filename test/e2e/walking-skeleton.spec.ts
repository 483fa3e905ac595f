import { checkInvariants } from '@steerline/contracts';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

const script = [{ tool: { name: 'sleep', args: { ms: 3000 } } }, { tool: { name: 'sleep', args: { ms: 300 } } }, { text: 'finished' }];

describe('a steer travels from HTTP into a running turn and lands in PostgreSQL', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it('two steers sent during step 1’s tool are delivered at step 1, in order, and the transcript shows what the model saw', async () => {
    const conversation = await stack.api('POST', '/conversations');
    expect(conversation.status).toBe(201);
    const cid = conversation.body.id;
    const turn = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'Refactor the parser', model: { provider: 'scripted', script } });
    expect(turn.status).toBe(202);
    const tid = turn.body.turnId;

    // Both are sent within step 1's 3 s tool call, the second once the first is in the log,
    // so their order is the order sent, not the order two racing requests happened to land.
    const wait = { Prefer: 'wait=20' };
    const first = stack.api('POST', `/turns/${tid}/steers`, { text: 'Keep the public API' }, wait);
    await stack.turnHas(tid, 'SteerQueued');
    const second = stack.api('POST', `/turns/${tid}/steers`, { text: 'Add tests first' }, wait);
    const [a, b] = await Promise.all([first, second]);
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', position: 1, requestStep: 2, text: 'Keep the public API' });
    expect(b.status).toBe(200);
    expect(b.body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', position: 2 });

    // The step-2 model request holds both texts, in order, after step 1's tool result.
    await eventually(() => stack.model.requests.find((r) => r.step === 3), 20_000, 'step 3 request');
    const step2 = stack.model.requests.find((r) => r.step === 2)!;
    expect(step2.messages.slice(-3).map((m) => [m.role, m.content])).toEqual([
      ['tool', 'slept 3000 ms'],
      ['user', 'Keep the public API'],
      ['user', 'Add tests first'],
    ]);

    const finished = await eventually(async () => {
      const r = await stack.api('GET', `/turns/${tid}`);
      return r.status === 200 && r.body.status === 'completed' ? r : undefined;
    }, 20_000, 'the turn to complete in the read model');
    expect(finished.body).toMatchObject({ steps: 3, steers: { queued: 0, delivered: 2, dropped: 0 } });

    await stack.settled();
    const transcript = await stack.api('GET', `/conversations/${cid}`);
    expect(transcript.status).toBe(200);
    expect(transcript.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'Refactor the parser'],
      ['assistant', ''],
      ['tool', 'slept 3000 ms'],
      ['user', 'Keep the public API'],
      ['user', 'Add tests first'],
      ['assistant', 'Acknowledged: Keep the public API\nAcknowledged: Add tests first'],
      ['tool', 'slept 300 ms'],
      ['assistant', 'finished'],
    ]);
    expect(transcript.body.steers.map((s: { status: string; position: number }) => [s.position, s.status])).toEqual([
      [1, 'delivered'],
      [2, 'delivered'],
    ]);

    // The log itself: I1–I6 hold, and each delivery precedes the request that carries it.
    const log = (await stack.nats.readAll()).filter((e) => e.event.turnId === tid);
    expect(checkInvariants(log, { requireSettled: true })).toEqual([]);
    const types = log.map((e) => e.event.type);
    expect(types.indexOf('SteeringDelivered')).toBeLessThan(types.lastIndexOf('ModelRequested'));
    const request2 = log.find((e) => e.event.type === 'ModelRequested' && e.event.data.step === 2)!;
    for (const d of log.filter((e) => e.event.type === 'SteeringDelivered')) expect(d.streamSeq).toBeLessThan(request2.streamSeq);
  });

  it('a steer to a finished turn gets 409 turn_not_running and appends no event', async () => {
    const cid = (await stack.api('POST', '/conversations')).body.id;
    const tid = (await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'quick', model: { provider: 'scripted', script: [{ text: 'ok' }] } })).body.turnId;
    await eventually(async () => ((await stack.api('GET', `/turns/${tid}`)).body?.status === 'completed' ? true : undefined));
    const before = (await stack.nats.readAll()).length;
    const late = await stack.api('POST', `/turns/${tid}/steers`, { text: 'too late' });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('turn_not_running');
    expect((await stack.nats.readAll()).length).toBe(before);
  });
});

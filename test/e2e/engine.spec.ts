import { checkInvariants, type Receipt } from '@steerline/contracts';
import { request, type StoredEvent } from '@steerline/runtime';
import { startEngine, type RunningEngine } from '../../apps/engine/src/app';
import { eventually, NATS_URL, openNats, uniquePrefix, type NatsHandle } from '../support/env';

describe('engine over real NATS JetStream', () => {
  const prefix = uniquePrefix();
  let nats: NatsHandle;
  let engine: RunningEngine;
  const call = <T>(subject: string, body: unknown) => request<T>(nats.nc, subject, body, { timeoutMs: 30_000, noResponders: 'turn_not_running' });

  beforeAll(async () => {
    nats = await openNats(prefix);
    engine = await startEngine({ natsUrl: NATS_URL, prefix, engineId: 'engine-a', streamReplicas: 1, leaseMs: 5000, resumeLimit: 3 }, { logger: false });
  });
  afterAll(async () => {
    await engine.close();
    await nats.close();
  });

  it('a steer sent during step 1’s tool is delivered at step 1’s boundary, before step 2’s request', async () => {
    const { id: conversationId } = await call<{ id: string }>(nats.s.createConversation, { tenantId: 'default' });
    const { turnId } = await call<{ turnId: string }>(nats.s.startTurn, {
      tenantId: 'default',
      conversationId,
      prompt: 'work',
      model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 3000 } } }, { text: 'finished' }] },
    });
    // Sent once the tool runs, with seconds of the tool left: a busy machine cannot push it out of the window.
    await eventually(async () => ((await nats.readAll()).some((e) => e.event.turnId === turnId && e.event.type === 'ToolCallStarted') ? true : undefined), 20_000, 'step 1’s tool to start');
    const receipt = await call<Receipt>(nats.s.turnSteer(turnId), { tenantId: 'default', text: '  go left ' });
    expect(receipt).toMatchObject({ status: 'queued', position: 1, text: 'go left', turnId });

    let events: StoredEvent[] = [];
    await eventually(async () => {
      events = (await nats.readAll()).filter((e) => e.event.turnId === turnId);
      return events.some((e) => e.event.type === 'TurnCompleted') || undefined;
    }, 20_000, 'the turn to complete');
    expect(events.map((e) => e.event.type)).toEqual([
      'TurnStarted',
      'ModelRequested',
      'ModelResponded',
      'ToolCallStarted',
      'SteerQueued',
      'ToolCallFinished',
      'SteeringDelivered',
      'ModelRequested',
      'ModelResponded',
      'TurnCompleted',
    ]);
    expect(events.at(-1)!.event.data).toMatchObject({ text: 'Acknowledged: go left\nfinished' });
    expect(checkInvariants(events, { requireSettled: true })).toEqual([]);
    await expect(call(nats.s.turnSteer(turnId), { tenantId: 'default', text: 'late' })).rejects.toMatchObject({ code: 'turn_not_running' });
  });

  it('a conversation whose last message does not decode still takes a new turn (the append names the true last sequence)', async () => {
    const { id: conversationId } = await call<{ id: string }>(nats.s.createConversation, { tenantId: 'default' });
    await nats.js.publish(nats.s.conversationEvents('default', conversationId), 'not an event');
    const { turnId } = await call<{ turnId: string }>(nats.s.startTurn, { tenantId: 'default', conversationId, prompt: 'after the noise', model: { provider: 'scripted', script: [{ text: 'fine' }] } });
    const events = await eventually(async () => {
      const all = (await nats.readAll()).filter((e) => e.event.turnId === turnId);
      return all.some((e) => e.event.type === 'TurnCompleted') ? all : undefined;
    }, 20_000, 'the turn to complete');
    expect(events[0].event).toMatchObject({ type: 'TurnStarted', data: { prompt: 'after the noise' } });
  });
});

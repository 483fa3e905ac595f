import { checkInvariants, type ChatMessage } from '@steerline/contracts';
import type { ModelAnswer, ModelProvider, ModelRequest } from '../../apps/engine/src/models/model.provider';
import { pool } from '../../scripts/bench/stats';
import { eventually } from '../support/env';
import { startStack, type Stack } from '../support/stack';

/** Holds a turn's first model call until `release`, so steers can pile up; then the scripted model answers. */
class HeldModel implements ModelProvider {
  release!: () => void;
  private readonly gate = new Promise<void>((r) => (this.release = r));
  held = false;
  constructor(private readonly inner: ModelProvider) {}

  async complete(request: ModelRequest, signal: AbortSignal): Promise<ModelAnswer> {
    if (request.messages[0]?.content === 'hold' && request.step === 1) {
      this.held = true;
      await this.gate;
    }
    return this.inner.complete(request, signal);
  }
}

describe('input at the edge of every limit', () => {
  let stack: Stack;
  let model: HeldModel;
  beforeAll(async () => {
    // No rate limit: the point is the size and number of inputs, not their rate.
    stack = await startStack({ env: { STEERLINE_RATE_LIMIT: '0' } });
    model = new HeldModel(stack.model);
    stack.engine.service.models.register('scripted', model);
  });
  afterAll(() => stack?.close());

  const conversation = async () => (await stack.api('POST', '/conversations')).body.id as string;

  it('a prompt of 100 000 four-byte characters (~400 KB) is refused 413 payload_too_large, and nothing is appended', async () => {
    const cid = await conversation();
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: '😀'.repeat(100_000), model: { provider: 'scripted', script: [] } });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ error: { code: 'payload_too_large' } });
    const events = (await stack.nats.readAll()).filter((e) => e.event.conversationId === cid);
    expect(events.map((e) => e.event.type)).toEqual(['ConversationCreated']);
  });

  it('a prompt one unit over the limit is refused 400; the largest four-byte prompt the limits allow runs and reads back whole', async () => {
    const cid = await conversation();
    const over = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'a'.repeat(100_001), model: { provider: 'scripted', script: [] } });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ error: { code: 'invalid_request' } });
    // 50 000 four-byte characters are 100 000 UTF-16 units (the prompt limit) and 200 KB (under the body limit).
    const prompt = '😀'.repeat(50_000);
    const res = await stack.api('POST', `/conversations/${cid}/turns`, { prompt, model: { provider: 'scripted', script: [{ text: 'read it' }] } });
    expect(res.status).toBe(202);
    await stack.turnEnded(res.body.turnId);
    await stack.settled();
    const view = await stack.api('GET', `/conversations/${cid}`);
    expect(view.status).toBe(200);
    expect(view.body.messages[0].content).toBe(prompt);
    expect((await stack.api('GET', `/turns/${res.body.turnId}`)).body).toMatchObject({ prompt, status: 'completed' });
  });

  it('1 000 queued steers of 4 000 characters are accepted, the next is queue_full, and all reach the model, the log and the read model', async () => {
    const cid = await conversation();
    const start = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'hold', model: { provider: 'scripted', script: [{ text: 'first' }] }, limits: { maxQueued: 1000 } });
    expect(start.status).toBe(202);
    const tid = start.body.turnId as string;
    await eventually(() => model.held || undefined, 20_000, 'the model to be held');

    const text = (i: number) => `${String(i).padStart(4, '0')}${'中'.repeat(3996)}`;
    const results = await pool(Array.from({ length: 1000 }, (_, i) => () => stack.api('POST', `/turns/${tid}/steers`, { text: text(i) }, { prefer: 'wait=0' })), 16);
    expect(results.map((r) => r.status)).toEqual(Array(1000).fill(202));
    const full = await stack.api('POST', `/turns/${tid}/steers`, { text: 'one too many' }, { prefer: 'wait=0' });
    expect(full.status).toBe(429);
    expect(full.body).toMatchObject({ error: { code: 'queue_full' } });
    // 4 000 four-byte characters are 8 000 UTF-16 units: over the steer limit, refused before any engine is asked.
    const wide = await stack.api('POST', `/turns/${tid}/steers`, { text: '😀'.repeat(4000) }, { prefer: 'wait=0' });
    expect(wide.status).toBe(400);
    expect(wide.body).toMatchObject({ error: { code: 'invalid_request' } });

    model.release();
    const events = await stack.turnEnded(tid, 60_000);
    expect(events.at(-1)!.event.type).toBe('TurnCompleted');
    expect(events.filter((e) => e.event.type === 'SteeringDelivered')).toHaveLength(1000);
    expect(checkInvariants(events, { requireSettled: true })).toEqual([]);
    const delivered = stack.model.requests.find((r) => r.step === 2 && r.messages[0]?.turnId === tid)!;
    expect(delivered.messages.filter((m: ChatMessage) => m.role === 'user' && m.steerId)).toHaveLength(1000);

    await eventually(async () => {
      await stack.settled();
      return true;
    }, 60_000, 'the projector to catch up');
    const view = await stack.api('GET', `/conversations/${cid}`);
    expect(view.status).toBe(200);
    expect(view.body.steers).toHaveLength(1000);
    // Sent 16 at a time, so queue positions are not send order: each steer still has its own text, in position order.
    const sent = new Map(results.map((r, i) => [r.body.steerId as string, text(i)]));
    const steers = view.body.steers as { id: string; text: string; status: string; position: number }[];
    expect(steers.map((s) => s.position)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(steers.every((s) => s.status === 'delivered' && s.text === sent.get(s.id))).toBe(true);
    const last = steers[999];
    const receipt = await stack.api('GET', `/turns/${tid}/steers/${last.id}`);
    expect(receipt).toMatchObject({ status: 200, body: { status: 'delivered', position: 1000, text: sent.get(last.id) } });
  });
});

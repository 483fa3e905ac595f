import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { headers } from '@nats-io/transport-node';
import { EVENT_TYPE_HEADER, uuidv7, type ChatMessage } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import type { ModelAnswer, ModelProvider, ModelRequest } from '../../apps/engine/src/models/model.provider';
import type { HealthView } from '../../apps/persistence/src/queries/query-responders';
import { eventually } from '../support/env';
import { approve, startStack, steerWhileHeld, type Stack } from '../support/stack';

/**
 * The read side over the whole stack: the transcript is what the model saw,
 * poison in the log is kept aside without stopping anything, and a rebuild
 * from the log while the service runs answers every query exactly as before.
 */

const REBUILD = join(__dirname, '../../dist/scripts/rebuild.js');

/** Every model answer, by turn and step, so a transcript can be checked against request + answer. */
class AnswerRecorder implements ModelProvider {
  readonly answers = new Map<string, ModelAnswer>();
  constructor(private readonly inner: ModelProvider) {}
  async complete(req: ModelRequest, signal: AbortSignal): Promise<ModelAnswer> {
    const answer = await this.inner.complete(req, signal);
    this.answers.set(`${turnOf(req)}:${req.step}`, answer);
    return answer;
  }
}

// A request's last message (prompt, tool result or steer) always belongs to the turn that sent it.
const turnOf = (req: ModelRequest) => req.messages[req.messages.length - 1].turnId;

let stack: Stack;
let answers: AnswerRecorder;
let cid: string;
/** Every conversation and turn the tests made, for the before/after comparison of a rebuild. */
const conversationIds: string[] = [];
const turnIds: string[] = [];
const steerIds: Record<string, string> = {};

const wait = { Prefer: 'wait=30' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const health = () => request<HealthView>(stack.nats.nc, stack.nats.s.queryHealth, {}, { timeoutMs: 20_000, noResponders: 'unavailable' });

/** Starts a turn in `conversation` and resolves once the model got its first request. */
async function startTurn(conversation: string, prompt: string, script: unknown[], limits?: object, approvals?: object): Promise<string> {
  const res = await stack.api('POST', `/conversations/${conversation}/turns`, { prompt, model: { provider: 'scripted', script }, ...(limits && { limits }), ...(approvals && { approvals }) });
  expect(res.status).toBe(202);
  const tid: string = res.body.turnId;
  await eventually(() => stack.model.requests.some((r) => turnOf(r) === tid), 20_000, `turn ${tid}'s first model request`);
  return tid;
}

// A sleep that waits for approval holds step 1 until it is approved, so steers sent meanwhile land in it however slow the machine.
const held = { tools: ['sleep'] };

async function ended(tid: string): Promise<string> {
  const turn = await eventually(async () => {
    const r = await stack.api('GET', `/turns/${tid}`);
    return r.status === 200 && r.body.status !== 'running' ? r.body : undefined;
  }, 20_000, `turn ${tid} to end`);
  return turn.status;
}

/** The model context of the turn's last request, followed by that request's answer. */
function finalContext(tid: string): ChatMessage[] {
  const last = stack.model.requests.filter((r) => turnOf(r) === tid).at(-1)!;
  const answer = answers.answers.get(`${tid}:${last.step}`)!;
  expect(answer).toBeDefined();
  const reply: ChatMessage = { role: 'assistant', content: answer.text, turnId: tid, step: last.step, ...(answer.toolCalls.length && { toolCalls: answer.toolCalls }) };
  return [...last.messages, reply];
}

beforeAll(async () => {
  expect(existsSync(REBUILD)).toBe(true); // `npm run build` first (npm test does)
  stack = await startStack();
  answers = new AnswerRecorder(stack.model);
  stack.engine.service.models.register('scripted', answers);
  cid = (await stack.api('POST', '/conversations')).body.id;
  conversationIds.push(cid);
});

afterAll(async () => {
  await stack?.close();
});

describe('the transcript is exactly what the model saw', () => {
  it('a steer sent during a tool reaches the model after the tool results (tool_results)', async () => {
    const tid = await startTurn(cid, 'Plan the migration', [{ tool: { name: 'sleep', args: { ms: 10 } } }, { tools: [{ name: 'echo', args: { text: 'a' } }, { name: 'echo', args: { text: 'b' } }] }, { text: 'planned' }], undefined, held);
    const steer = await steerWhileHeld(stack, tid, 'Keep the old schema readable');
    expect(steer.body).toMatchObject({ status: 'delivered', boundary: 'tool_results', step: 1 });
    steerIds.delivered = steer.body.steerId;
    expect(await ended(tid)).toBe('completed');
    turnIds.push(tid);
  });

  it('a steer sent while the model writes a text-only answer starts a continuation (turn_end)', async () => {
    // 2.5 s of answer: room for a slow round trip (a text-only answer cannot wait for an approval).
    const tid = await startTurn(cid, 'Summarise it', [{ text: 'summary', delayMs: 2500 }]);
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'Shorter, please' }, wait);
    expect(steer.body).toMatchObject({ status: 'delivered', boundary: 'turn_end', step: 1, requestStep: 2 });
    expect(await ended(tid)).toBe('completed');
    turnIds.push(tid);
  });

  it('a withdrawn steer never reaches the model; the one queued behind it does', async () => {
    const tid = await startTurn(cid, 'Write the tests', [{ tool: { name: 'sleep', args: { ms: 10 } } }, { text: 'written' }], undefined, held);
    const withdrawn = await stack.api('POST', `/turns/${tid}/steers`, { text: 'Use mocks' });
    const kept = await stack.api('POST', `/turns/${tid}/steers`, { text: 'Use the real database' });
    expect([withdrawn.status, kept.status]).toEqual([202, 202]);
    const dropped = await stack.api('DELETE', `/turns/${tid}/steers/${withdrawn.body.steerId}`);
    expect(dropped.body).toMatchObject({ status: 'dropped', reason: 'withdrawn', text: 'Use mocks' });
    steerIds.withdrawn = withdrawn.body.steerId;
    await approve(stack, tid);
    expect(await ended(tid)).toBe('completed');
    turnIds.push(tid);
  });

  it('a cancel drops the queued steer and ends the transcript at the last answer', async () => {
    const tid = await startTurn(cid, 'Deploy it', [{ tool: { name: 'sleep', args: { ms: 5000 } } }, { text: 'deployed' }]);
    await sleep(100);
    const queued = await stack.api('POST', `/turns/${tid}/steers`, { text: 'Canary first' });
    expect(queued.status).toBe(202);
    expect((await stack.api('POST', `/turns/${tid}/cancel`, {})).status).toBe(202);
    expect(await ended(tid)).toBe('cancelled');
    steerIds.cancelled = queued.body.steerId;
    turnIds.push(tid);
  });

  it('at the continuation cap a queued steer is dropped and never shown to the model', async () => {
    const tid = await startTurn(cid, 'Wrap up', [{ text: 'wrapped', delayMs: 2500 }], { maxContinuations: 0 });
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'One more thing' }, wait);
    expect(steer.body.error).toMatchObject({ code: 'steer_dropped', reason: 'continuation_cap' });
    steerIds.capped = steer.body.error.steerId;
    expect(await ended(tid)).toBe('completed');
    turnIds.push(tid);
  });

  it('messages equal each turn’s final model request plus its answer, message for message', async () => {
    await stack.settled();
    const view = (await stack.api('GET', `/conversations/${cid}`)).body;
    for (const tid of turnIds) {
      const expected = finalContext(tid);
      expect(view.messages.slice(0, expected.length)).toEqual(expected);
    }
    // The last turn's context is the whole conversation.
    expect(view.messages).toEqual(finalContext(turnIds.at(-1)!));
    const contents = view.messages.map((m: ChatMessage) => m.content);
    for (const hidden of ['Use mocks', 'Canary first', 'One more thing']) expect(contents).not.toContain(hidden);
    expect(contents).toEqual(expect.arrayContaining(['Keep the old schema readable', 'Shorter, please', 'Use the real database']));
    const status = (id: string) => view.steers.find((s: { id: string }) => s.id === id);
    expect(status(steerIds.delivered)).toMatchObject({ status: 'delivered', boundary: 'tool_results' });
    expect(status(steerIds.withdrawn)).toMatchObject({ status: 'dropped', reason: 'withdrawn' });
    expect(status(steerIds.cancelled)).toMatchObject({ status: 'dropped', reason: 'turn_cancelled' });
    expect(status(steerIds.capped)).toMatchObject({ status: 'dropped', reason: 'continuation_cap' });
    expect(view.turns.map((t: { status: string }) => t.status)).toEqual(['completed', 'completed', 'completed', 'cancelled', 'completed']);
  });

  it('pages of the transcript put together are the whole transcript', async () => {
    const whole = (await stack.api('GET', `/conversations/${cid}`)).body.messages;
    const pages: ChatMessage[] = [];
    for (let after = 0; after <= whole.length; after += 4) {
      const page = await stack.api('GET', `/conversations/${cid}?afterMessage=${after}&limit=4`);
      expect(page.status).toBe(200);
      expect(page.body.messages.length).toBe(Math.min(4, whole.length - after));
      pages.push(...page.body.messages);
    }
    expect(pages).toEqual(whole);
    expect((await stack.api('GET', `/conversations/${cid}?afterMessage=0&limit=0`)).status).toBe(400);
  });
});

describe('poison in the log', () => {
  const poison: { seq: number; subject: string; payload: Buffer; reason: string }[] = [];
  let later: string;

  async function publishRaw(subject: string, payload: Buffer, reason: string, type?: string): Promise<void> {
    const h = headers();
    if (type) h.set(EVENT_TYPE_HEADER, type);
    const ack = await stack.nats.js.publish(subject, payload, { msgID: uuidv7(), headers: h });
    poison.push({ seq: ack.seq, subject, payload, reason });
  }

  it('malformed JSON, an unknown type and an unknown version are dead-lettered and later conversations still project', async () => {
    const s = stack.nats.s;
    const envelope = (conversationId: string) => ({ id: uuidv7(), tenantId: 'default', conversationId, turnId: uuidv7(), seq: 1, at: new Date().toISOString() });
    const [x, y] = [uuidv7(), uuidv7()];
    // Not on a subject a turn starts on later: the engine reads a conversation's last event before appending to it.
    await publishRaw(s.conversationEvents('default', cid), Buffer.from('{"type": "TurnStarted", '), 'not_json');
    await publishRaw(s.conversationEvents('default', x), Buffer.from(JSON.stringify({ ...envelope(x), type: 'SteerTeleported', version: 1, data: {} })), 'unknown_type', 'SteerTeleported');
    await publishRaw(s.conversationEvents('default', y), Buffer.from(JSON.stringify({ ...envelope(y), type: 'TurnStarted', version: 99, data: {} })), 'unknown_version', 'TurnStarted');

    later = (await stack.api('POST', '/conversations')).body.id;

    const tid = await startTurn(later, 'After the poison', [{ tool: { name: 'echo', args: { text: 'still here' } } }, { text: 'fine' }]);
    expect(await ended(tid)).toBe('completed');
    conversationIds.push(later);
    turnIds.push(tid);
    await stack.settled();
    expect((await stack.api('GET', `/conversations/${later}`)).body.messages).toEqual(finalContext(tid));

    const db = await pg();
    try {
      const rows = (await db.query('SELECT stream_seq, subject, reason, payload FROM dead_letters ORDER BY stream_seq')).rows;
      expect(rows.map((r) => ({ seq: Number(r.stream_seq), subject: r.subject, payload: r.payload, reason: r.reason }))).toEqual(poison);
    } finally {
      await db.end();
    }
    expect(await health()).toMatchObject({ deadLetters: 3, stalledConversations: 0, lag: 0 });
  });
});

describe('npm run rebuild', () => {
  /** Every query the read side answers, for every conversation, turn and steer so far. */
  async function everyQuery(): Promise<unknown[]> {
    const answers: unknown[] = [];
    const get = async (path: string) => {
      const res = await stack.api('GET', path);
      answers.push({ path, status: res.status, body: res.body });
      return res.body;
    };
    for (const conversation of conversationIds) {
      const view = await get(`/conversations/${conversation}`);
      await get(`/conversations/${conversation}?afterMessage=3&limit=5`);
      for (const st of view.steers) await get(`/turns/${st.turnId}/steers/${st.id}`);
    }
    for (const turn of turnIds) await get(`/turns/${turn}`);
    return answers;
  }

  const withoutGeneration = ({ generation: _generation, ...rest }: HealthView) => rest;

  it('replays the log into a new generation, switches to it, and every query and table is as before', async () => {
    await stack.settled();
    const before = await everyQuery();
    const healthBefore = await health();
    const { generation } = healthBefore;
    await rebuild();
    const healthAfter = await health();
    expect(healthAfter.generation).toBe(generation! + 1);
    expect(withoutGeneration(healthAfter)).toEqual(withoutGeneration(healthBefore));
    expect(await everyQuery()).toEqual(before);
    const db = await pg();
    try {
      expect(await dumpGeneration(db, `rm_${generation! + 1}`)).toEqual(await dumpGeneration(db, `rm_${generation}`));
    } finally {
      await db.end();
    }
  });

  it('runs while a turn is being steered; the live projector follows the new generation and misses nothing', async () => {
    const before = await everyQuery();
    const { generation } = await health();
    const other = (await stack.api('POST', '/conversations')).body.id;
    const tid = await startTurn(other, 'During the rebuild', [{ tool: { name: 'sleep', args: { ms: 1500 } } }, { tool: { name: 'sleep', args: { ms: 1500 } } }, { text: 'through' }]);
    const rebuilt = rebuild();
    const steer = await stack.api('POST', `/turns/${tid}/steers`, { text: 'Mind the switch' }, wait);
    expect(steer.body).toMatchObject({ status: 'delivered' });
    await rebuilt;
    expect(await ended(tid)).toBe('completed');
    await stack.settled();
    expect((await health()).generation).toBe(generation! + 1);
    expect((await stack.api('GET', `/conversations/${other}`)).body.messages).toEqual(finalContext(tid));
    expect(await everyQuery()).toEqual(before);
    expect(await health()).toMatchObject({ lag: 0, deadLetters: 3 });
  });
});

async function rebuild(): Promise<void> {
  const env = { ...process.env, ...stack.env, DATABASE_URL: stack.persistence.config.databaseUrl };
  const { stdout } = await promisify(execFile)(process.execPath, [REBUILD], { env, timeout: 25_000 });
  expect(stdout).toContain('rebuild complete');
}

/** A connection whose unqualified table names are the active generation's. */
async function pg(): Promise<Client> {
  const db = new Client({ connectionString: stack.persistence.config.databaseUrl });
  await db.connect();
  await db.query(`SELECT set_config('search_path', schema_name, false) FROM projection_active JOIN projection_generations ON id = generation`);
  return db;
}

/** Every row of every table of a generation, in key order; `recorded_at` says when, not what. */
async function dumpGeneration(db: Client, schema: string): Promise<Record<string, unknown[]>> {
  const tables = (await db.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, [schema])).rows.map((r) => r.table_name as string);
  expect(tables).toEqual(['checkpoints', 'conversations', 'dead_letters', 'messages', 'stalled_conversations', 'steers', 'turns']);
  const dump: Record<string, unknown[]> = {};
  for (const table of tables) {
    const rows = (await db.query(`SELECT * FROM "${schema}"."${table}" ORDER BY 1, 2`)).rows;
    dump[table] = rows.map(({ recorded_at: _recorded, ...row }) => row);
  }
  return dump;
}

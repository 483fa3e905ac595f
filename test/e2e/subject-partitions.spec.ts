import { ConsoleLogger } from '@nestjs/common';
import { SteerlineError, subjects, uuidv7, type SteerlineEvent } from '@steerline/contracts';
import { createLogger, request } from '@steerline/runtime';
import { readSse } from '@steerline/client';
import { startEngine, type RunningEngine } from '../../apps/engine/src/app';
import { loadEngineConfig } from '../../apps/engine/src/config';
import { EventLog, StaleWriterError } from '../../apps/engine/src/log/event-log';
import { startGateway, type RunningGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { startPersistence, type PersistenceApp } from '../../apps/persistence/src/app';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { partitionName } from '../../apps/persistence/src/projector/partitions';
import { rebuildReadModels } from '../../apps/persistence/src/rebuild/rebuild';
import { apiAt, startStack, type Stack } from '../support/stack';

/**
 * A deployment moves to partitioned event subjects (README, "Partitioned
 * subjects"): conversations with history on `<prefix>.evt.<tenant>.<cid>`, the
 * engines and persistence restarted with STEERLINE_SUBJECT_PARTITIONS=4, then
 * `npm run rebuild`. Old conversations go on, on their new subject, fenced there.
 */
describe('moving a deployment to partitioned subjects', () => {
  let stack: Stack;
  let databaseUrl = '';
  let engine: RunningEngine | undefined;
  let persistence: PersistenceApp | undefined;
  let gateway: RunningGateway | undefined;
  let api: Stack['api'];
  const script = (text: string) => ({ provider: 'scripted', script: [{ text }] });

  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_PARTITIONS: '4' }, databaseUrl: (url) => (databaseUrl = url) });
    api = stack.api;
  });

  afterAll(async () => {
    await gateway?.close().catch(() => undefined);
    await engine?.close().catch(() => undefined);
    await persistence?.close().catch(() => undefined);
    await stack?.close();
  });

  const runTurn = async (cid: string, text: string) => {
    const res = await api('POST', `/conversations/${cid}/turns`, { prompt: `say ${text}`, model: script(text) });
    expect(res.status).toBe(202);
    await stack.turnEnded(res.body.turnId as string);
    return res.body.turnId as string;
  };
  const eventsOf = async (cid: string) => (await stack.nats.readAll()).filter((e) => e.event.conversationId === cid);

  it('keeps every conversation whole and appends the old ones on their partitioned subject, fenced', async () => {
    const s4 = subjects(stack.prefix, { subjectPartitions: 4 });
    const old = await Promise.all([0, 1, 2, 3, 4, 5].map(async () => (await stack.api('POST', '/conversations')).body.id as string));
    for (const cid of old) await runTurn(cid, 'before');
    for (const cid of old) expect((await eventsOf(cid)).every((e) => e.subject === stack.nats.s.conversationEvents('default', cid))).toBe(true);

    // The migration: a gateway with the setting, the engines and persistence restarted with it, then a rebuild with as many partitions.
    const env = { ...stack.env, STEERLINE_PARTITIONS: '4', STEERLINE_SUBJECT_PARTITIONS: '4' };
    gateway = await startGateway(loadGatewayConfig({ ...env, PORT: '0' }), { logger: createLogger({ level: 'error' }) });
    api = apiAt(gateway.url);
    await stack.engine.close();
    await stack.persistence.close();
    engine = await startEngine({ ...loadEngineConfig(env), leaseMs: 5000 }, { logger: false });
    persistence = await startPersistence(loadPersistenceConfig({ ...env, DATABASE_URL: databaseUrl }), { logger: new ConsoleLogger({ json: true, logLevels: ['error'] }) });
    const report = await rebuildReadModels(loadPersistenceConfig({ ...env, DATABASE_URL: databaseUrl }));
    expect(report.deadLetters).toBe(0);

    // Old conversations run turns again; a new one starts partitioned.
    for (const cid of old) await runTurn(cid, 'after');
    const fresh = (await api('POST', '/conversations')).body.id as string;
    await runTurn(fresh, 'new');
    for (const cid of [...old, fresh]) {
      const events = await eventsOf(cid);
      const after = events.filter((e) => e.event.type === 'TurnStarted').at(-1)!.streamSeq;
      // Everything appended after the restart is on the conversation's partitioned subject.
      expect(events.filter((e) => e.streamSeq >= after).every((e) => e.subject === s4.conversationEvents('default', cid))).toBe(true);
      expect(s4.conversationEvents('default', cid)).toMatch(new RegExp(`^${stack.prefix}\\.evt\\.default\\.${cid}\\.[0-3]$`));
    }

    const last = (await stack.nats.jsm.streams.info(stack.nats.s.stream)).state.last_seq;
    await persistence.projector.waitForSeq(last, 15_000);
    for (const cid of old) {
      // The read model holds both turns, the one from before and the one after.
      const view = (await api('GET', `/conversations/${cid}`)).body;
      expect(view.turns.map((t: { status: string }) => t.status)).toEqual(['completed', 'completed']);
      expect(view.messages.filter((m: { role: string }) => m.role === 'assistant').map((m: { content: string }) => m.content)).toEqual(['before', 'after']);
      // The gateway replays the conversation from both subjects, in stream order.
      const replay = await sseReplay(gateway.url, cid, 2);
      expect(replay).toEqual((await eventsOf(cid)).map((e) => e.streamSeq));
    }
    for (const i of [0, 1, 2, 3]) {
      const info = await stack.nats.jsm.consumers.info(stack.nats.s.stream, partitionName(stack.nats.s.projectorConsumer, i, 4));
      expect(info.config.filter_subject).toBe(s4.partitionEvents(i));
    }

    // The fence holds on the new subject: a writer that read the conversation before the engine's appends there is refused.
    const cid = old[0];
    const stale: SteerlineEvent = { id: uuidv7(), type: 'ConversationCreated', version: 1, tenantId: 'default', conversationId: cid, turnId: null, seq: 0, at: new Date().toISOString(), data: {} } as SteerlineEvent;
    await expect(new EventLog(stack.nats.nc).append(s4.conversationEvents('default', cid), [stale], 0)).rejects.toBeInstanceOf(StaleWriterError);
    // And an id from before cannot be created again, though its subject from before is not the one written now.
    const again = request(stack.nats.nc, s4.createConversation, { tenantId: 'default', conversationId: cid }, { timeoutMs: 10_000, noResponders: 'unavailable' });
    await expect(again).rejects.toMatchObject({ code: 'invalid_request' } satisfies Partial<SteerlineError>);
  });
});

/** The stream sequences a client replaying the conversation from its start gets, up to its `turns`-th turn end. */
async function sseReplay(baseUrl: string, cid: string, turns: number): Promise<number[]> {
  const controller = new AbortController();
  const res = await fetch(`${baseUrl}/v1/conversations/${cid}/events`, { signal: controller.signal });
  const seqs: number[] = [];
  let ended = 0;
  try {
    for await (const m of readSse(res.body!)) {
      if (m.id) seqs.push(Number(m.id));
      if (['TurnCompleted', 'TurnCancelled', 'TurnFailed'].includes(m.event) && ++ended === turns) break;
    }
  } finally {
    controller.abort();
  }
  return seqs;
}

import { DEFAULT_LIMITS, checkInvariants, ensureStream, uuidv7 } from '@steerline/contracts';
import { EventLog } from '../../apps/engine/src/log/event-log';
import { OrphanReaper } from '../../apps/engine/src/ownership/orphan-reaper';
import type { OwnedTurn, TurnOwnership } from '../../apps/engine/src/ownership/turn-ownership';
import { openNats, uniquePrefix, type NatsHandle } from '../support/env';
import { TurnLog, conversationCreated, TENANT } from '../support/turn-log';

describe('the orphan reaper and queued turns (DESIGN §8.3)', () => {
  let nats: NatsHandle;
  beforeAll(async () => {
    nats = await openNats(uniquePrefix());
    await ensureStream(nats.jsm, nats.s);
  });
  afterAll(() => nats.close());

  it('settling a dead engine’s turn also cancels the turns queued behind it, so the conversation can go on', async () => {
    const cid = uuidv7();
    const subject = nats.s.conversationEvents(TENANT, cid);
    const log = new EventLog(nats.js);
    const model = { provider: 'scripted' as const, name: 'scripted', script: [] };
    const running = new TurnLog(cid);
    const queued = new TurnLog(cid);
    const events = [
      conversationCreated(cid),
      running.event('TurnStarted', { prompt: 'p', model, limits: DEFAULT_LIMITS, engineId: 'gone' }),
      running.event('ModelRequested', { step: 1, steerIds: [] }),
      queued.event('TurnQueued', { prompt: 'after', model, limits: DEFAULT_LIMITS, position: 1 }),
    ];
    await log.append(subject, events, 0);
    const orphan: OwnedTurn = { turnId: running.turnId, tenantId: TENANT, conversationId: cid, engineId: 'gone' } as OwnedTurn;
    const ownership = { orphans: async () => [orphan], release: async () => undefined, retryLater: () => undefined } as unknown as TurnOwnership;
    const reaper = new OrphanReaper({ jsm: nats.jsm, s: nats.s, log, ownership, runsHere: () => false });
    expect(await reaper.sweep()).toBe(1);
    const logged = (await nats.readAll()).filter((e) => e.event.conversationId === cid);
    expect(logged.map((e) => [e.event.type, e.event.turnId])).toEqual([
      ['ConversationCreated', null],
      ['TurnStarted', running.turnId],
      ['ModelRequested', running.turnId],
      ['TurnQueued', queued.turnId],
      ['TurnFailed', running.turnId],
      ['TurnCancelled', queued.turnId],
    ]);
    expect(logged.at(-1)!.event.data).toEqual({ steps: 0, reason: 'engine_lost' });
    expect(checkInvariants(logged.map((e) => ({ event: e.event })), { requireSettled: true })).toEqual([]);
  });
});

import { uuidv7 } from '@steerline/contracts';
import { HeldClaims } from '../../apps/engine/src/ownership/held-claims';
import { TurnOwnership } from '../../apps/engine/src/ownership/turn-ownership';
import { eventually, openNats, uniquePrefix, type NatsHandle } from '../support/env';

// Renewed every 500 ms: a busy machine's pauses must not let a live engine's lease run out under the test.
const LEASE_MS = 1500;
const running = () => false;

describe('turn ownership leases in NATS KV', () => {
  let nats: NatsHandle;
  const open: TurnOwnership[] = [];
  const engine = async (id: string) => {
    const o = await TurnOwnership.open(nats.nc, nats.s, id, LEASE_MS);
    open.push(o);
    return o;
  };
  const leaseGone = (engineId: string) =>
    nats.jsm.streams
      .getMessage(`KV_${nats.s.enginesBucket}`, { last_by_subj: `$KV.${nats.s.enginesBucket}.${engineId}` })
      .then((m) => m === null)
      .catch(() => true);
  const turn = () => ({ turnId: uuidv7(), tenantId: 'default', conversationId: uuidv7() });

  beforeAll(async () => {
    nats = await openNats(uniquePrefix());
  });
  afterAll(async () => {
    await Promise.all(open.map((o) => o.close(true)));
    await nats.close();
  });

  it('a live engine’s turns are not orphans; once its lease runs out they are, and a released one is gone', async () => {
    const reaper = await engine(`reaper-${uuidv7()}`);
    const dying = await engine(`dying-${uuidv7()}`);
    const [kept, released] = [turn(), turn()];
    await dying.claim(kept);
    await dying.claim(released);
    expect(await reaper.orphans(running)).toEqual([]);

    await dying.release(released.turnId);
    await dying.close(false);
    const orphans = await eventually(async () => {
      const found = await reaper.orphans(running);
      return found.length > 0 ? found : undefined;
    }, 10_000, 'the dead engine’s lease to run out');
    expect(orphans).toEqual([{ ...kept, engineId: dying.engineId }]);
    await reaper.release(kept.turnId, dying.engineId);
  });

  it('an orphan a sweep could not settle is listed again on the next sweep, not only on a full one', async () => {
    const reaper = await engine(`reaper-${uuidv7()}`);
    const dying = await engine(`dying-${uuidv7()}`);
    const t = turn();
    await dying.claim(t);
    await reaper.orphans(running); // a full sweep: the dying engine is seen alive
    await dying.close(false);
    await eventually(() => leaseGone(dying.engineId), 10_000, 'the dead engine’s lease to run out');
    expect((await reaper.orphans(running)).map((o) => o.turnId)).toEqual([t.turnId]);

    // Not settled and not retried: only the engines that died since the last sweep are listed.
    expect(await reaper.orphans(running)).toEqual([]);
    reaper.retryLater(dying.engineId);
    expect((await reaper.orphans(running)).map((o) => o.turnId)).toEqual([t.turnId]);
    // Once settled and released, it is not listed again.
    await reaper.release(t.turnId, dying.engineId);
    reaper.retryLater(dying.engineId);
    expect(await reaper.orphans(running)).toEqual([]);
  });

  it('an engine’s own claim for a turn it no longer runs is an orphan; one it runs is not', async () => {
    const self = await engine(`self-${uuidv7()}`);
    const [stopped, live] = [turn(), turn()];
    await self.claim(stopped);
    await self.claim(live);
    const found = await self.orphans((turnId) => turnId === live.turnId);
    expect(found).toEqual([{ ...stopped, engineId: self.engineId }]);
  });

  it('held claims: releasing a conversation’s ended turns deletes those claims only, and a turn claimed again is held until it ends again', async () => {
    const self = await engine(`held-${uuidv7()}`);
    const claims = new HeldClaims(self, (turnId, err) => {
      throw new Error(`release of ${turnId} failed: ${err.message}`);
    });
    const a = uuidv7();
    const b = uuidv7();
    const [a1, a2, a3] = [0, 1, 2].map(() => ({ ...turn(), conversationId: a }));
    const b1 = { ...turn(), conversationId: b };
    for (const t of [a1, a2, a3, b1]) await claims.claim(t);
    claims.ended(a1.turnId);
    claims.ended(a2.turnId);
    claims.ended(b1.turnId);
    claims.releaseEnded(a);
    const stillClaimed = async () => (await self.orphans(() => false)).map((o) => o.turnId).sort();
    await eventually(async () => ((await stillClaimed()).length === 2 ? true : undefined), 10_000, 'the ended turns of conversation a to be released');
    expect(await stillClaimed()).toEqual([a3.turnId, b1.turnId].sort());
    expect([a1, a2, a3, b1].map((t) => claims.has(t.turnId))).toEqual([false, false, true, true]);

    // Claimed again (resumed here): no longer ended, so releasing the conversation's ended turns keeps it.
    await claims.claim(b1);
    claims.releaseEnded(b);
    expect(claims.has(b1.turnId)).toBe(true);
    claims.ended(b1.turnId);
    claims.releaseEnded(b);
    expect(claims.has(b1.turnId)).toBe(false);
  });
});

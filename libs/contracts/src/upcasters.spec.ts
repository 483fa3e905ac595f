import { decodeEvent } from './decode';
import { loadFixtures } from './fixtures';
import { CURRENT_VERSIONS, UpcasterRegistry, upcasters, type RawEvent } from './upcasters';

// A synthetic history: suppose SteerQueued v0 called the position `order` and had no
// queue depth. Nothing like it was ever written; it exercises the mechanism a real v2 will use.
const steerQueuedV1 = JSON.parse(loadFixtures().find((f) => f.file === 'SteerQueued.v1.json')!.json);
const { position, queueDepth: _depth, ...v0Data } = steerQueuedV1.data;
const steerQueuedV0 = { ...steerQueuedV1, version: 0, data: { ...v0Data, order: position } };

function v0ToV1(event: RawEvent): RawEvent {
  const { order, ...data } = event.data as { order: number };
  return { ...event, data: { ...data, position: order, queueDepth: order } };
}

describe('upcasters', () => {
  it('an event written at an older version is upcast to the current one before it is validated', () => {
    const registry = new UpcasterRegistry().register('SteerQueued', 0, v0ToV1);
    const decoded = decodeEvent(JSON.stringify(steerQueuedV0), { upcasters: registry });
    expect(decoded).toMatchObject({ ok: true, upcastFrom: 0, event: { type: 'SteerQueued', version: 1, data: { position, queueDepth: position } } });
  });

  it('an older version without an upcaster is unknown_version, and so is a version newer than the contract', () => {
    expect(decodeEvent(JSON.stringify(steerQueuedV0))).toMatchObject({ ok: false, reason: 'unknown_version' });
    expect(decodeEvent(JSON.stringify({ ...steerQueuedV1, version: CURRENT_VERSIONS.SteerQueued + 1 }))).toMatchObject({
      ok: false,
      reason: 'unknown_version',
      message: expect.stringMatching(/reads up to v1/),
    });
  });

  it('an upcaster that throws is reported as upcast_failed, never thrown', () => {
    const registry = new UpcasterRegistry().register('SteerQueued', 0, () => {
      throw new Error('no order');
    });
    expect(decodeEvent(JSON.stringify(steerQueuedV0), { upcasters: registry })).toMatchObject({ ok: false, reason: 'upcast_failed', message: expect.stringMatching(/no order/) });
  });

  it('an upcaster whose output does not fit the current schema is a schema failure', () => {
    const registry = new UpcasterRegistry().register('SteerQueued', 0, (e) => e);
    expect(decodeEvent(JSON.stringify(steerQueuedV0), { upcasters: registry })).toMatchObject({ ok: false, reason: 'schema' });
  });

  it('the registry stamps each step’s version, walks a chain of steps and refuses a second upcaster for one step', () => {
    const registry = new UpcasterRegistry()
      .register('X', 0, (e) => ({ ...e, version: 99, a: 1 }))
      .register('X', 1, (e) => ({ ...e, b: 2 }));
    expect(registry.upcast({ type: 'X', version: 0 }, 2)).toEqual({ ok: true, from: 0, event: { type: 'X', version: 2, a: 1, b: 2 } });
    expect(() => registry.register('X', 1, (e) => e)).toThrow(/already registered/);
    expect(registry.list()).toEqual([
      { type: 'X', fromVersion: 0 },
      { type: 'X', fromVersion: 1 },
    ]);
  });

  it('an upcaster cannot change the event it was given', () => {
    const original = structuredClone(steerQueuedV0);
    new UpcasterRegistry().register('SteerQueued', 0, (e) => Object.assign(e, { mutated: true })).upcast(steerQueuedV0, 1);
    expect(steerQueuedV0).toEqual(original);
  });

  it('the contract registers exactly one upcaster for every step below each type’s current version', () => {
    const needed = Object.entries(CURRENT_VERSIONS).flatMap(([type, v]) => Array.from({ length: v - 1 }, (_, i) => ({ type, fromVersion: i + 1 })));
    expect(upcasters.list()).toEqual(needed);
  });

  it('a SteerDropped v1 reads as v2 unchanged', () => {
    const v1 = JSON.parse(loadFixtures().find((f) => f.file === 'SteerDropped.v1.json')!.json);
    expect(decodeEvent(JSON.stringify(v1))).toMatchObject({ ok: true, upcastFrom: 1, event: { ...v1, version: 2 } });
  });

  it('a TurnStarted v2 and a TurnQueued v1 read as the current version unchanged: no instructions, default settings, every tool', () => {
    for (const file of ['TurnStarted.v2.json', 'TurnQueued.v1.json']) {
      const older = JSON.parse(loadFixtures().find((f) => f.file === file)!.json);
      const decoded = decodeEvent(JSON.stringify(older));
      expect(decoded).toMatchObject({ ok: true, upcastFrom: older.version, event: { ...older, version: CURRENT_VERSIONS[older.type as 'TurnStarted' | 'TurnQueued'] } });
      expect(decoded.ok && decoded.event.data).not.toHaveProperty('settings');
    }
  });
});

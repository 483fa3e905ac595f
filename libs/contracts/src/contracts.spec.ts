import { CURRENT_VERSIONS, EVENT_TYPES, decodeEvent, type EventType, subjects, parseEventSubject, stableHash, subjectPartitionOf, normalizeSteerText, SteerlineError, uuidv7, isUuid, TurnLimitsSchema, StartTurnCommand } from './index';
import { loadFixtures } from './fixtures';

describe('contracts', () => {
  const fixtures = loadFixtures();

  it('there is a golden fixture for every event type', () => {
    expect(new Set(fixtures.map((f) => f.type))).toEqual(new Set(EVENT_TYPES));
  });

  it.each(fixtures.map((f) => [f.file, f]))('the golden fixture %s decodes against its schema (upcast to the current version)', (_file, fixture) => {
    const decoded = decodeEvent(fixture.json);
    expect(decoded).toMatchObject({ ok: true, event: { type: fixture.type, version: CURRENT_VERSIONS[fixture.type as EventType] } });
  });

  it('an event of an unknown type, an unknown version or a bad shape is refused with a reason, never thrown', () => {
    expect(decodeEvent('{nope')).toMatchObject({ ok: false, reason: 'not_json' });
    expect(decodeEvent(JSON.stringify({ type: 'SomethingNew', version: 1 }))).toMatchObject({ ok: false, reason: 'unknown_type' });
    const started = JSON.parse(fixtures.find((f) => f.type === 'TurnStarted')!.json);
    expect(decodeEvent(JSON.stringify({ ...started, version: 99 }))).toMatchObject({ ok: false, reason: 'unknown_version' });
    expect(decodeEvent(JSON.stringify({ ...started, seq: -1 }))).toMatchObject({ ok: false, reason: 'schema' });
  });

  it('subjects are built from the prefix and event subjects parse back', () => {
    const s = subjects('acme');
    expect(s.stream).toBe('ACME_EVENTS');
    expect(s.turnSteer('t1')).toBe('acme.cmd.turn.t1.steer');
    expect(parseEventSubject(s.conversationEvents('tenant-a', 'c1'))).toEqual({ prefix: 'acme', tenantId: 'tenant-a', conversationId: 'c1' });
    expect(() => s.conversationEvents('a.b', 'c')).toThrow(/not a valid subject token/);
  });

  it('with subject partitions, a conversation is written on one subject whose last token is its partition, and both forms parse', () => {
    const s = subjects('acme', { subjectPartitions: 4 });
    const subject = s.conversationEvents('tenant-a', 'c1');
    const p = stableHash('c1') % 4;
    expect(subject).toBe(`acme.evt.tenant-a.c1.${p}`);
    expect(s.conversationEvents('tenant-a', 'c1')).toBe(subject);
    expect(parseEventSubject(subject)).toEqual({ prefix: 'acme', tenantId: 'tenant-a', conversationId: 'c1', partition: p });
    expect(parseEventSubject('acme.evt.tenant-a.c1')).toEqual({ prefix: 'acme', tenantId: 'tenant-a', conversationId: 'c1' });
    expect(s.conversationEventSubjects('tenant-a', 'c1')).toEqual(['acme.evt.tenant-a.c1', subject]);
    expect(s.conversationLog('tenant-a', 'c1')).toEqual({ write: subject, read: ['acme.evt.tenant-a.c1', subject] });
    expect(subjects('acme').conversationLog('tenant-a', 'c1')).toEqual({ write: 'acme.evt.tenant-a.c1', read: ['acme.evt.tenant-a.c1'] });
    expect(s.conversationEventForms('tenant-a', 'c1')).toEqual(['acme.evt.tenant-a.c1', 'acme.evt.tenant-a.c1.*']);
    expect(s.partitionEvents(3)).toBe('acme.evt.*.*.3');
    expect(s.tenantStored('tenant-a')).toBe('acme.stored.tenant-a.>');
    expect(s.conversationStoredSubjects('tenant-a', 'c1')).toEqual(['acme.stored.tenant-a.c1', `acme.stored.tenant-a.c1.${p}`]);
    expect(subjects('acme').conversationStoredSubjects('tenant-a', 'c1')).toEqual(['acme.stored.tenant-a.c1']);
    // One partition (the default) keeps the subjects from before partitions.
    expect(subjects('acme').conversationEvents('tenant-a', 'c1')).toBe('acme.evt.tenant-a.c1');
    expect(subjects('acme', { subjectPartitions: 1 }).conversationEvents('tenant-a', 'c1')).toBe('acme.evt.tenant-a.c1');
    expect(() => subjects('acme', { subjectPartitions: 65 })).toThrow(/subjectPartitions/);
    expect(() => subjects('acme', { subjectPartitions: 0 })).toThrow(/subjectPartitions/);
  });

  it('an event subject of another shape does not parse', () => {
    for (const bad of ['acme.evt.t', 'acme.evt.t.c.x', 'acme.evt.t.c.64', 'acme.evt.t.c.01', 'acme.evt.t.c.1.2', 'acme.stored.t.c', 'acme.evt..c']) {
      expect(parseEventSubject(bad)).toBeUndefined();
    }
  });

  it('the subject partition is FNV-1a of the conversation id, stable across releases and spread evenly', () => {
    expect(stableHash('')).toBe(0x811c9dc5);
    expect(stableHash('a')).toBe(0xe40c292c);
    expect(subjectPartitionOf('anything', 1)).toBe(0);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[subjectPartitionOf(uuidv7(1_700_000_000_000 + i), 4)] += 1;
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });

  it('a steer text is trimmed; empty, over-long or control-character text is invalid_request', () => {
    expect(normalizeSteerText('  hi\n')).toBe('hi');
    for (const bad of ['', '   ', 'x'.repeat(4001), 'bell\u0007']) {
      expect(() => normalizeSteerText(bad)).toThrow(SteerlineError);
    }
  });

  it('UUIDv7 ids are valid UUIDs that sort by creation time', () => {
    const a = uuidv7(1000);
    const b = uuidv7(2000);
    expect(isUuid(a) && isUuid(b)).toBe(true);
    expect(a[14]).toBe('7');
    expect('89ab').toContain(a[19]);
    expect(a < b).toBe(true);
    // The first 48 bits are the milliseconds; the rest differ between ids of the same millisecond.
    const now = Date.parse('2026-11-29T12:00:00.123Z');
    const ids = Array.from({ length: 1000 }, () => uuidv7(now));
    expect(new Set(ids).size).toBe(1000);
    expect(ids.every((id) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16) === now && isUuid(id))).toBe(true);
  });

  it('limits default and are validated within their ranges', () => {
    expect(TurnLimitsSchema.parse({})).toEqual({ maxQueued: 5, maxContinuations: 10, maxSteps: 50 });
    expect(TurnLimitsSchema.safeParse({ maxQueued: 0 }).success).toBe(false);
    expect(StartTurnCommand.safeParse({ tenantId: 'default', conversationId: uuidv7(), prompt: 'x', limits: { maxSteps: -1 } }).success).toBe(false);
  });
});

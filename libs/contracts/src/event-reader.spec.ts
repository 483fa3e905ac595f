import { decodeOrThrow, EventDecodeError } from './decode';
import { decodeEvent } from './decode';
import { SteerlineError } from './errors';
import { EventSchemas } from './events';
import { loadFixtures } from './fixtures';
import { CURRENT_VERSIONS } from './upcasters';

const fixture = (type: string) => JSON.parse(loadFixtures().find((f) => f.file === `${type}.v1.json`)!.json);

describe('reading events: the writer is strict, readers are tolerant', () => {
  it('fields a reader does not know are dropped, at any depth, and reported, never an error', () => {
    const started = fixture('TurnStarted');
    const newer = {
      ...started,
      traceId: 'abc',
      data: { ...started.data, priority: 2, limits: { ...started.data.limits, maxTokens: 10 }, model: { ...started.data.model, temperature: 0.2 } },
    };
    const decoded = decodeEvent(JSON.stringify(newer));
    // Read at the current version: a v1 TurnStarted is upcast to it.
    expect(decoded).toMatchObject({ ok: true, event: { ...started, version: CURRENT_VERSIONS.TurnStarted } });
    expect(decoded.ok && decoded.ignoredFields?.sort()).toEqual(['data.limits.maxTokens', 'data.model.temperature', 'data.priority', 'traceId']);
    // The writer's schema still refuses them: an engine cannot write a field the contract does not declare.
    expect(EventSchemas.TurnStarted.safeParse(newer).success).toBe(false);
  });

  it('an event the current schema describes is read unchanged and reports nothing ignored', () => {
    const delivered = JSON.parse(loadFixtures().find((f) => f.file === 'SteeringDelivered.v2.json')!.json);
    const decoded = decodeEvent(JSON.stringify(delivered));
    expect(decoded).toEqual({ ok: true, event: delivered });
  });

  it('a wrong value next to an unknown field is still a schema failure that names the field', () => {
    const queued = fixture('SteerQueued');
    const decoded = decodeEvent(JSON.stringify({ ...queued, extra: 1, data: { ...queued.data, position: 0 } }));
    expect(decoded).toMatchObject({ ok: false, reason: 'schema', message: expect.stringMatching(/data\.position/) });
  });

  it('a message that is not an event object is refused with a reason', () => {
    expect(decodeEvent('[1,2]')).toMatchObject({ ok: false, reason: 'schema' });
    expect(decodeEvent('null')).toMatchObject({ ok: false, reason: 'schema' });
    expect(decodeEvent(new Uint8Array([0xff, 0xfe]))).toMatchObject({ ok: false, reason: 'not_json' });
  });

  it('decodeOrThrow throws a typed EventDecodeError carrying the reason', () => {
    expect(decodeOrThrow(JSON.stringify(fixture('TurnCompleted'))).type).toBe('TurnCompleted');
    let thrown: unknown;
    try {
      decodeOrThrow(JSON.stringify({ ...fixture('TurnCompleted'), version: 7 }));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(EventDecodeError);
    expect(thrown).toBeInstanceOf(SteerlineError);
    expect(thrown).toMatchObject({ code: 'invalid_request', reason: 'unknown_version' });
    expect((thrown as SteerlineError).toBody()).toMatchObject({ code: 'invalid_request', reason: 'unknown_version' });
  });
});

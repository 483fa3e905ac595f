import type { z } from 'zod';
import { EVENT_TYPES, EventSchemas, type EventType, type SteerlineEvent } from './events';
import { currentVersion, upcasters as defaultUpcasters, type RawEvent, type UpcasterRegistry } from './upcasters';
import type { DecodeResult } from './decode';

export interface DecodeOptions {
  /** The upcasters to read older versions with; the contract's own by default. */
  upcasters?: UpcasterRegistry;
}

// Each pass strips the keys zod reported; nested unknown keys are all reported in
// one pass, so a second pass only happens for keys hidden behind a failing union.
const MAX_STRIP_PASSES = 3;

/**
 * Reads one parsed event: checks type and version, upcasts an older version,
 * then validates it against the current schema.
 *
 * Writer strict, reader tolerant: the schemas are `.strict()` because they are
 * what a writer must produce exactly, but a reader drops fields it does not
 * know instead of refusing the event. Adding an optional field is then a
 * compatible change a consumer on an older contract survives (the contract gate
 * allows exactly that without a new version). Never throws.
 */
export function readEvent(raw: unknown, opts: DecodeOptions = {}): DecodeResult {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, reason: 'schema', message: 'an event is a JSON object' };
  }
  const type = (raw as { type?: unknown }).type;
  if (typeof type !== 'string' || !(EVENT_TYPES as string[]).includes(type)) {
    return { ok: false, reason: 'unknown_type', message: `unknown event type ${JSON.stringify(type)}` };
  }
  const version = (raw as { version?: unknown }).version;
  const current = currentVersion(type as EventType);
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 0 || version > current) {
    // A newer version than this contract knows: the consumer must upgrade before it can read it.
    return { ok: false, reason: 'unknown_version', message: `${type} version ${JSON.stringify(version)} is not readable (this contract reads up to v${current})` };
  }
  let event = raw as RawEvent;
  let upcastFrom: number | undefined;
  if (version < current) {
    const upcast = (opts.upcasters ?? defaultUpcasters).upcast(event, current);
    if (!upcast.ok) return { ok: false, reason: upcast.reason, message: upcast.message };
    event = upcast.event;
    upcastFrom = upcast.from;
  }
  const parsed = parseTolerant(EventSchemas[type as EventType], event);
  if (!parsed.ok) return { ok: false, reason: 'schema', message: parsed.message };
  return {
    ok: true,
    event: parsed.value as SteerlineEvent,
    ...(upcastFrom !== undefined && { upcastFrom }),
    ...(parsed.ignored.length > 0 && { ignoredFields: parsed.ignored }),
  };
}

type Tolerant = { ok: true; value: unknown; ignored: string[] } | { ok: false; message: string };

/** Parses with a strict schema, dropping the keys it does not know (reported as `ignored`). */
export function parseTolerant(schema: z.ZodType, value: unknown): Tolerant {
  let candidate = value;
  const ignored: string[] = [];
  for (let pass = 0; ; pass++) {
    const parsed = schema.safeParse(candidate);
    if (parsed.success) return { ok: true, value: parsed.data, ignored };
    const issues = parsed.error.issues;
    const onlyUnknownKeys = issues.every((i) => i.code === 'unrecognized_keys');
    if (!onlyUnknownKeys || pass >= MAX_STRIP_PASSES) {
      return { ok: false, message: issues.map((i) => `${i.path.length ? i.path.join('.') : 'event'}: ${i.message}`).join('; ') };
    }
    if (pass === 0) candidate = structuredClone(candidate);
    for (const issue of issues) {
      if (issue.code !== 'unrecognized_keys') continue;
      const holder = issue.path.reduce<unknown>((node, key) => (node as Record<PropertyKey, unknown> | undefined)?.[key as PropertyKey], candidate);
      if (typeof holder !== 'object' || holder === null) continue;
      for (const key of issue.keys) {
        delete (holder as Record<string, unknown>)[key];
        ignored.push([...issue.path, key].join('.'));
      }
    }
  }
}

import { z } from 'zod';
import { EVENT_TYPES, EventSchemas, type EventType } from './events';
import { CURRENT_VERSIONS } from './upcasters';

/** A JSON Schema document (draft-07), as plain JSON. */
export type JsonSchema = { [keyword: string]: unknown };

/**
 * JSON Schema draft-07: what most validators and code generators read, and
 * the base of the AsyncAPI schema format, so one export serves both.
 */
const TARGET = 'draft-07';

/**
 * The schema a *reader* validates against. `io: 'input'`: a field with a
 * default may be missing from older events. Objects are left open (no
 * `additionalProperties: false`): readers tolerate fields a later writer adds,
 * which the compatibility rules allow within a version. The writer's own,
 * closed contract stays the zod schema in events.ts.
 */
export function readerJsonSchema(schema: z.ZodType): JsonSchema {
  return openObjects(z.toJSONSchema(schema, { target: TARGET, io: 'input', unrepresentable: 'any' })) as JsonSchema;
}

/** The committed file name of an event type's schema at one version. */
export function schemaFileName(type: string, version: number): string {
  return `${type}.v${version}.json`;
}

/** The reader's JSON Schema of one event envelope at its current version. */
export function eventJsonSchema(type: EventType): JsonSchema {
  const version = CURRENT_VERSIONS[type];
  const { $schema, ...rest } = readerJsonSchema(EventSchemas[type]);
  return { $schema, $id: `urn:steerline:event:${type}:v${version}`, title: `${type} v${version}`, ...rest };
}

/** File name → schema, for every event type at its current version. */
export function eventJsonSchemas(): Map<string, JsonSchema> {
  return new Map(EVENT_TYPES.map((t) => [schemaFileName(t, CURRENT_VERSIONS[t]), eventJsonSchema(t)]));
}

function openObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(openObjects);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    // `false` closes an object; a schema value (a record's values) is kept.
    if (key === 'additionalProperties' && value === false) continue;
    out[key] = openObjects(value);
  }
  return out;
}

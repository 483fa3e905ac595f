import type { JsonSchema } from './json-schema';

/**
 * Compatibility of one event version's schema with what was committed for it.
 *
 * Events stay in the log for ever, and consumers upgrade on their own
 * schedule, so a change at an existing version must work both ways: a new
 * reader reads every old event, and an old (tolerant) reader reads every new
 * one. Only two kinds of change pass that test:
 *   - a new *optional* property (old readers drop it; old events lack it);
 *   - documentation (`title`, `description`, `examples`).
 * Anything else — a removed or renamed property, a new required one, a type,
 * enum, format, bound or default changed — is breaking: it needs a new version
 * of the event and an upcaster from the old one (see upcasters.ts).
 */
export interface SchemaChanges {
  breaking: string[];
  compatible: string[];
}

const DOC_KEYWORDS = new Set(['title', 'description', 'examples', '$comment']);

export function compareSchemas(before: JsonSchema, after: JsonSchema): SchemaChanges {
  const changes: SchemaChanges = { breaking: [], compatible: [] };
  compareNode(before, after, '$', changes);
  return changes;
}

function compareNode(before: unknown, after: unknown, path: string, out: SchemaChanges): void {
  if (isObject(before) && isObject(after)) {
    compareObjects(before, after, path, out);
  } else if (Array.isArray(before) && Array.isArray(after) && before.length === after.length) {
    before.forEach((item, i) => compareNode(item, after[i], `${path}[${i}]`, out));
  } else if (JSON.stringify(before) !== JSON.stringify(after)) {
    out.breaking.push(`${path} changed from ${show(before)} to ${show(after)}`);
  }
}

function compareObjects(before: Record<string, unknown>, after: Record<string, unknown>, path: string, out: SchemaChanges): void {
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const at = `${path}.${key}`;
    if (DOC_KEYWORDS.has(key)) {
      if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) out.compatible.push(`${at} (documentation) changed`);
    } else if (key === 'properties' && isObject(before[key]) && isObject(after[key])) {
      compareProperties(before, after, path, out);
    } else if (key === 'required') {
      compareRequired(before, after, path, out);
    } else if (!(key in after)) {
      out.breaking.push(`${at} was removed (${show(before[key])})`);
    } else if (!(key in before)) {
      out.breaking.push(`${at} was added (${show(after[key])})`);
    } else {
      compareNode(before[key], after[key], at, out);
    }
  }
}

function compareProperties(before: Record<string, unknown>, after: Record<string, unknown>, path: string, out: SchemaChanges): void {
  const was = before.properties as Record<string, unknown>;
  const is = after.properties as Record<string, unknown>;
  const required = new Set((after.required as string[] | undefined) ?? []);
  for (const name of Object.keys(was)) {
    if (!(name in is)) out.breaking.push(`${path}.${name} was removed`);
    else compareNode(was[name], is[name], `${path}.${name}`, out);
  }
  for (const name of Object.keys(is)) {
    if (name in was) continue;
    if (required.has(name)) out.breaking.push(`${path}.${name} is a new required property (events already in the log lack it)`);
    else out.compatible.push(`${path}.${name} is a new optional property`);
  }
}

function compareRequired(before: Record<string, unknown>, after: Record<string, unknown>, path: string, out: SchemaChanges): void {
  const was = new Set((before.required as string[] | undefined) ?? []);
  const is = new Set((after.required as string[] | undefined) ?? []);
  const existed = (before.properties ?? {}) as Record<string, unknown>;
  const stillThere = (after.properties ?? {}) as Record<string, unknown>;
  for (const name of is) {
    // New properties are judged in compareProperties.
    if (!was.has(name) && name in existed) out.breaking.push(`${path}.${name} became required (events already in the log may lack it)`);
  }
  for (const name of was) {
    if (!is.has(name) && name in stillThere) out.breaking.push(`${path}.${name} is no longer required (readers rely on it)`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? 'nothing' : text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

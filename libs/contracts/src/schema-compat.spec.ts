import { z } from 'zod';
import { readerJsonSchema } from './json-schema';
import { compareSchemas } from './schema-compat';

const base = z.object({ steerId: z.uuid(), position: z.number().int().positive(), reason: z.enum(['withdrawn', 'engine_lost']), note: z.string().optional() }).strict();
const changes = (after: z.ZodType) => compareSchemas(readerJsonSchema(base), readerJsonSchema(after));

describe('schema compatibility within one event version', () => {
  it('a new optional property is compatible', () => {
    const result = changes(base.extend({ priority: z.number().optional() }));
    expect(result.breaking).toEqual([]);
    expect(result.compatible).toEqual(['$.priority is a new optional property']);
  });

  it('documentation changes are compatible', () => {
    expect(changes(base.describe('a steer was queued')).breaking).toEqual([]);
  });

  it.each<[string, z.ZodType, RegExp]>([
    ['a new required property', base.extend({ priority: z.number() }), /\$\.priority is a new required property/],
    ['a removed property', base.omit({ note: true }), /\$\.note was removed/],
    ['a changed type', base.extend({ position: z.string() }), /\$\.position\.type changed from "integer" to "string"/],
    ['a new enum value (old readers refuse it)', base.extend({ reason: z.enum(['withdrawn', 'engine_lost', 'expired']) }), /\$\.reason\.enum/],
    ['an optional property made required', base.extend({ note: z.string() }), /\$\.note became required/],
    ['a required property made optional', base.extend({ position: z.number().int().positive().optional() }), /\$\.position is no longer required/],
    ['a tighter bound', base.extend({ position: z.number().int().positive().max(10) }), /\$\.position\.maximum/],
  ])('%s is breaking', (_what, after, message) => {
    const result = changes(after);
    expect(result.breaking.join('\n')).toMatch(message);
  });

  it('identical schemas have no changes', () => {
    expect(changes(base)).toEqual({ breaking: [], compatible: [] });
  });
});

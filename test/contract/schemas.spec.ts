import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  CURRENT_VERSIONS,
  EVENT_TYPES,
  UpcasterRegistry,
  upcasters,
  decodeEvent,
  eventJsonSchemas,
  schemaFileName,
  type EventType,
  type JsonSchema,
} from '@steerline/contracts';
import { checkCommittedSchemas, generatedContractFiles, readCommittedSchemas } from '@steerline/runtime';
import { loadFixtures } from '../../libs/contracts/src/fixtures';
import { schemaValidator } from './validator';

const root = resolve(__dirname, '../..');
const committed = readCommittedSchemas(root);
const fixtures = loadFixtures();

describe('contract gate: committed schemas, fixtures and generated files', () => {
  it('every generated contract file is committed and up to date (npm run contracts:generate)', () => {
    const stale = [...generatedContractFiles()].filter(([file, text]) => !existsSync(join(root, file)) || readFileSync(join(root, file), 'utf8') !== text).map(([file]) => file);
    expect(stale).toEqual([]);
  });

  it('the committed JSON Schema of every event version still matches its zod schema, and every older one has upcasters', () => {
    const problems = checkCommittedSchemas(committed);
    expect(problems.map((p) => p.message)).toEqual([]);
  });

  it('a breaking change to an event schema without a new version fails, telling to bump the version and add an upcaster', () => {
    const changed = new Map(eventJsonSchemas());
    const file = schemaFileName('SteerQueued', CURRENT_VERSIONS.SteerQueued);
    const schema = structuredClone(changed.get(file)!) as { properties: { data: { properties: Record<string, JsonSchema>; required: string[] } } };
    schema.properties.data.properties.position = { type: 'string' };
    changed.set(file, schema);
    const problems = checkCommittedSchemas(committed, changed);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file, kind: 'breaking' });
    expect(problems[0].message).toMatch(/\$\.data\.position\.type changed from "integer" to "string"/);
    expect(problems[0].message).toMatch(/Bump SteerQueued to v2, register an upcaster from v1/);
  });

  it('a compatible change (a new optional field) only asks for the committed schema to be regenerated', () => {
    const changed = new Map(eventJsonSchemas());
    const file = schemaFileName('TurnCompleted', CURRENT_VERSIONS.TurnCompleted);
    const schema = structuredClone(changed.get(file)!) as { properties: { data: { properties: Record<string, JsonSchema> } } };
    schema.properties.data.properties.summary = { type: 'string' };
    changed.set(file, schema);
    expect(checkCommittedSchemas(committed, changed)).toEqual([
      { file, kind: 'outdated', message: expect.stringMatching(/\$\.data\.summary is a new optional property.*contracts:generate/) },
    ]);
  });

  it('an older version kept in the history needs an upcaster chain to the current version', () => {
    const history = new Map(committed).set('SteerQueued.v0.json', { type: 'object' });
    expect(checkCommittedSchemas(history).map((p) => p.kind)).toEqual(['orphan']);
    const registry = new UpcasterRegistry().register('SteerQueued', 0, (e) => e);
    for (const step of upcasters.list()) registry.register(step.type, step.fromVersion, (e) => e);
    expect(checkCommittedSchemas(history, undefined, registry)).toEqual([]);
  });

  it('every event type and version in the history has a golden fixture and a committed schema', () => {
    const fixtureFiles = new Set(fixtures.map((f) => f.file));
    for (const type of EVENT_TYPES) expect(fixtureFiles).toContain(schemaFileName(type, CURRENT_VERSIONS[type]));
    expect([...committed.keys()].filter((f) => !fixtureFiles.has(f))).toEqual([]);
  });

  it.each(fixtures.map((f) => [f.file, f]))('the historic fixture %s still decodes to the current version and matches its committed schema', (file, fixture) => {
    const decoded = decodeEvent(fixture.json);
    expect(decoded).toMatchObject({ ok: true, event: { type: fixture.type, version: CURRENT_VERSIONS[fixture.type as EventType] } });
    const validate = schemaValidator(committed.get(file)!);
    expect(validate(JSON.parse(fixture.json))).toEqual([]);
  });
});

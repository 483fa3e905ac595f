import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Parser, type AsyncAPIDocumentInterface } from '@asyncapi/parser';
import { schemas as specVersions } from '@asyncapi/specs';
import { CURRENT_VERSIONS, EVENT_TYPES, subjects, type EventType } from '@steerline/contracts';
import { ASYNCAPI_VERSION, eventConsumerConfig, streamConfig } from '@steerline/runtime';
import { spectralProblems } from './spectral';

const committed = readFileSync(resolve(__dirname, '../../libs/contracts/asyncapi.json'), 'utf8');

// Spectral's severities: 0 error, 1 warning, 2 information, 3 hint.
const ERROR = 0;
const WARNING = 1;

describe('the AsyncAPI document of the NATS contract', () => {
  let document: AsyncAPIDocumentInterface;

  beforeAll(async () => {
    const parsed = await new Parser().parse(committed);
    const problems = parsed.diagnostics.filter((d) => d.severity === ERROR || d.severity === WARNING).map((d) => `${d.code} at ${d.path.join('.')}: ${d.message}`);
    expect(problems).toEqual([]);
    expect(parsed.document).toBeDefined();
    document = parsed.document!;
  });

  it('is the newest AsyncAPI 3.x the official parser reads, and parses without errors or warnings', () => {
    const newest3 = Object.keys(specVersions).filter((v) => /^3\.\d+\.\d+$/.test(v)).sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1);
    expect(ASYNCAPI_VERSION).toBe(newest3);
    expect(document.version()).toBe(ASYNCAPI_VERSION);
  });

  it('has no problem of any severity under Spectral’s spectral:asyncapi ruleset', async () => {
    expect(await spectralProblems(JSON.parse(committed), 'asyncapi')).toEqual([]);
  });

  it('gives every operation a description and a tag the document defines', () => {
    const defined = document.info().tags().all().map((t) => t.name());
    for (const operation of document.operations().all()) {
      expect({ id: operation.id(), description: Boolean(operation.description()) }).toEqual({ id: operation.id(), description: true });
      expect(operation.tags().all().map((t) => t.name()).every((t) => defined.includes(t))).toBe(true);
    }
  });

  it('lists every event type as a message on the conversation events channel, with its schema and version', () => {
    const channel = document.channels().all().find((c) => c.address() === '{prefix}.evt.{tenantId}.{conversationId}')!;
    expect(channel).toBeDefined();
    expect(channel.messages().all().map((m) => m.id()).sort()).toEqual([...EVENT_TYPES].sort());
    for (const message of channel.messages().all()) {
      expect(message.payload()?.properties()?.type?.const()).toBe(message.id());
      expect(message.headers()?.required()).toContain('Steerline-Event-Type');
      expect(message.extensions().get('x-steerline-version')?.value()).toBe(CURRENT_VERSIONS[message.id() as EventType]);
    }
  });

  it('lists every command and query subject of the contract as a request/reply operation answered on the requester’s inbox', () => {
    // Every subject builder, called with a stand-in for each id: a subject added to
    // subjects() but not to the document fails here. Wildcards are subscriptions, not requests.
    const s = subjects('acme') as Record<string, unknown>;
    const built = Object.values(s).map((v) => (typeof v === 'function' ? (v as (...ids: string[]) => string)('X', 'X') : v));
    const requestSubjects = built.filter((v): v is string => typeof v === 'string' && /\.(cmd|qry)\./.test(v) && !v.includes('*'));
    const operations = document.operations().all().filter((o) => o.action() === 'receive' && o.reply());
    const concrete = (address: string) => address.replace('{prefix}', 'acme').replace(/\{\w+\}/g, 'X');
    expect(operations.map((o) => concrete(o.channels().all()[0].address()!)).sort()).toEqual([...requestSubjects].sort());
    for (const operation of operations) {
      expect(operation.messages().all()).toHaveLength(1);
      const [reply] = operation.reply()!.messages().all();
      expect(reply.payload()?.anyOf()).toHaveLength(2);
    }
  });

  it('carries the stream and consumer settings as extensions, generated from streamConfig and the consumer kit', () => {
    const channel = document.channels().all().find((c) => c.address()?.includes('.evt.'))!;
    const placeholders = (value: unknown) => JSON.parse(JSON.stringify(value).replace(/__(\w+?)__/g, '{$1}'));
    const s = subjects('__prefix__');
    expect(channel.extensions().get('x-steerline-stream')?.value()).toMatchObject(placeholders(streamConfig(s)));
    expect(channel.extensions().get('x-steerline-consumer')?.value()).toMatchObject(placeholders(eventConsumerConfig(s, '{durable}')));
  });
});

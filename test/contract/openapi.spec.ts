import { createLogger } from '@steerline/runtime';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { startGateway, type RunningGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { OPERATIONS } from '../../apps/gateway/src/docs/operations';
import { NATS_URL, uniquePrefix } from '../support/env';
import { spectralProblems } from './spectral';

type Media = { schema?: Record<string, unknown>; example?: unknown; examples?: Record<string, { value: unknown }> };
type Operation = { operationId?: string; tags?: string[]; description?: string; requestBody?: { content: Record<string, Media> }; responses: Record<string, { content?: Record<string, Media> }> };
type OpenApi = { servers?: unknown[]; tags: { name: string }[]; components: { schemas: Record<string, unknown> }; paths: Record<string, Record<string, Operation>> };

/** Every operation of the document as `METHOD /path`, the key of operations.ts. */
function operations(doc: OpenApi): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]): [string, Operation] => [`${method.toUpperCase()} ${path}`, op]));
}

describe('the OpenAPI document the gateway serves at /docs/openapi.json', () => {
  let gateway: RunningGateway;
  let doc: OpenApi;

  beforeAll(async () => {
    // Only the docs are read: a gateway on the real NATS, with nothing behind it.
    gateway = await startGateway(loadGatewayConfig({ NATS_URL, STEERLINE_PREFIX: uniquePrefix(), PORT: '0' }), { logger: createLogger({ level: 'error' }) });
    doc = (await (await fetch(`${gateway.url}/docs/openapi.json`)).json()) as OpenApi;
  });
  afterAll(() => gateway?.close());

  it('has a row in the route table (apps/gateway/src/docs/operations.ts) for every route it serves, and none for a route it does not', () => {
    const served = operations(doc).map(([key]) => key);
    const missing = served.filter((key) => !OPERATIONS[key]);
    const stale = Object.keys(OPERATIONS).filter((key) => !served.includes(key));
    expect({ missing, stale }).toEqual({ missing: [], stale: [] });
  });

  it('gives every operation a stable camelCase operationId (unique), a defined tag, a description, and has servers', () => {
    const ids = operations(doc).map(([, op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = doc.tags.map((t) => t.name);
    for (const [key, op] of operations(doc)) {
      expect({ key, id: /^[a-z][a-zA-Z0-9]+$/.test(op.operationId ?? ''), tags: op.tags?.every((t) => tags.includes(t)), description: Boolean(op.description) }).toEqual({ key, id: true, tags: true, description: true });
    }
    expect(operations(doc).find(([key]) => key === 'POST /v1/turns/{tid}/steers')?.[1].operationId).toBe('steerTurn');
    expect(doc.servers?.length).toBeGreaterThan(0);
  });

  it('has no problem of any severity under Spectral’s spectral:oas ruleset', async () => {
    expect(await spectralProblems(doc, 'oas')).toEqual([]);
  });

  it('carries an example of every request body and every answer, each valid against its schema', () => {
    // The document's own components, so `$ref: '#/components/…'` resolves as in the document.
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(ajv);
    ajv.addSchema({ $id: 'openapi', components: doc.components });
    const problems: string[] = [];
    let checked = 0;
    for (const [key, op] of operations(doc)) {
      const media = [
        ...Object.entries(op.requestBody?.content ?? {}).map(([type, m]) => [`${key} request ${type}`, m] as const),
        ...Object.entries(op.responses).flatMap(([status, r]) => Object.entries(r.content ?? {}).map(([type, m]) => [`${key} ${status} ${type}`, m] as const)),
      ];
      for (const [where, m] of media) {
        const examples = m.example !== undefined ? [m.example] : Object.values(m.examples ?? {}).map((e) => e.value);
        if (!examples.length) problems.push(`${where}: no example`);
        const schema = JSON.parse(JSON.stringify(m.schema ?? {}).replaceAll('"#/components/', '"openapi#/components/'));
        const validate = ajv.compile(schema);
        for (const example of examples) {
          checked++;
          if (!validate(example)) problems.push(`${where}: ${ajv.errorsText(validate.errors)}`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(40);
  });

  it('shows a receipt of each kind, each error code a steer can get, the Prefer: wait header and the bearer key on the steer route', () => {
    const steer = doc.paths['/v1/turns/{tid}/steers'].post as Operation & { parameters: { name: string; in: string }[]; security: unknown };
    const statuses = (status: string) => steer.responses[status].content!['application/json'];
    expect((statuses('200').example as { status: string }).status).toBe('delivered');
    expect((statuses('202').example as { status: string }).status).toBe('queued');
    expect(Object.keys(statuses('409').examples!)).toEqual(expect.arrayContaining(['steer_dropped', 'turn_not_running', 'turn_moved_on']));
    expect(Object.keys(statuses('429').examples!)).toEqual(['queue_full', 'rate_limited']);
    const withdrawn = doc.paths['/v1/turns/{tid}/steers/{sid}'].delete.responses['200'].content!['application/json'].example as { status: string };
    expect(withdrawn.status).toBe('dropped');
    expect(steer.parameters).toContainEqual(expect.objectContaining({ name: 'Prefer', in: 'header' }));
    expect(steer.security).toEqual([{ apiKey: [] }]);
    expect((doc.components as Record<string, any>).securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});

import { z } from 'zod';
import type { ResponseDoc, RouteDoc } from './api-doc';
import { ERROR_EXAMPLES, errorCodesOf, EXAMPLES, PATH_EXAMPLES } from './examples';
import { OPERATIONS, operationKey } from './operations';

export interface DocumentedRoute {
  method: string;
  path: string;
  doc: RouteDoc | undefined;
  isPublic: boolean;
}

/** One OpenAPI operation: Nest's route, its `@ApiDoc`, its row of OPERATIONS and its examples. */
export function operation(route: DocumentedRoute): Record<string, unknown> {
  const doc = route.doc ?? { summary: `${route.method.toUpperCase()} ${route.path}`, responses: { 200: 'OK' } };
  const meta = OPERATIONS[operationKey(route.method, route.path)];
  const examples = meta ? EXAMPLES[meta.operationId] : undefined;
  const parameters = [
    ...[...route.path.matchAll(/:(\w+)/g)].map(([, name]) => {
      const given = doc.params?.[name];
      if (given) return { name, in: 'path', required: true, ...given };
      return { name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' }, ...(PATH_EXAMPLES[name] ? { example: PATH_EXAMPLES[name] } : {}) };
    }),
    ...Object.entries(doc.query ?? {}).map(([name, q]) => ({ name, in: 'query', required: false, description: q.description, schema: q.schema ?? { type: 'string' } })),
    ...Object.entries(doc.headers ?? {}).map(([name, h]) => ({
      name,
      in: 'header',
      required: false,
      description: h.description,
      schema: h.schema ?? { type: 'string' },
      ...(name.toLowerCase() === 'prefer' ? { example: 'wait=10' } : {}),
    })),
  ];
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(doc.responses)) responses[status] = responseObject(Number(status), response, examples?.responses[Number(status)]);
  if (!route.isPublic) responses['401'] ??= errorResponse(401, 'unauthorized: no or an unknown API key');
  return {
    ...(meta ? { operationId: meta.operationId, tags: [meta.tag], description: meta.description } : {}),
    summary: doc.summary,
    ...(doc.description ? { description: meta ? `${meta.description}\n\n${doc.description}` : doc.description } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(doc.body
      ? {
          requestBody: {
            required: !doc.bodyOptional,
            content: { 'application/json': { schema: jsonSchema(doc.body), ...(examples && 'request' in examples ? { example: examples.request } : {}) } },
          },
        }
      : {}),
    responses,
    security: route.isPublic ? [] : [{ apiKey: [] }],
  };
}

function responseObject(status: number, response: ResponseDoc, example: unknown): unknown {
  const { description, schema, contentType } = typeof response === 'string' ? { description: response, schema: undefined, contentType: undefined } : response;
  if (status >= 400) return errorResponse(status, description);
  if (!schema) return { description };
  const media = { schema: schema instanceof z.ZodType ? jsonSchema(schema) : schema, ...(example !== undefined ? { example } : {}) };
  const types: readonly string[] = typeof contentType === 'string' ? [contentType] : (contentType ?? ['application/json']);
  return { description, content: Object.fromEntries(types.map((type) => [type, media])) };
}

/** An error answer, with an example of each code it may carry. */
function errorResponse(status: number, description: string): unknown {
  const examples = Object.fromEntries(errorCodesOf(status, description).map((code) => [code, { summary: code, value: { error: ERROR_EXAMPLES[code] } }]));
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, examples } } };
}

/** What a client sends (`io: input`): transforms and defaults are the server's business. */
function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  return rest;
}

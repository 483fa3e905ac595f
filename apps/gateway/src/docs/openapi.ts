import { Inject, Injectable } from '@nestjs/common';
import { PATH_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { z } from 'zod';
import { ERROR_CODES } from '@steerline/contracts';
import { isPublicRoute } from '../auth/auth.guard';
import { API_DOC, type ResponseDoc, type RouteDoc } from './api-doc';

export interface DocumentedRoute {
  method: string;
  path: string;
  doc: RouteDoc | undefined;
  isPublic: boolean;
}

const ErrorSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { enum: [...ERROR_CODES] }, message: { type: 'string' } },
      additionalProperties: true,
      description: 'Some codes carry details: steer_dropped {reason, steerId, turnId, position, text}; rate_limited {retryAfterSeconds}; unavailable {steerId?}.',
    },
  },
};

/**
 * Builds the OpenAPI 3.1 document from the routes Nest registered (paths and
 * methods from its metadata, so an undocumented or renamed route cannot hide)
 * and each route's `@ApiDoc` (bodies as the zod schemas the routes validate with).
 */
@Injectable()
export class OpenApiBuilder {
  private cached?: Record<string, unknown>;

  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  routes(): DocumentedRoute[] {
    const routes: DocumentedRoute[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const { metatype, instance } = wrapper;
      if (!metatype || !instance) continue;
      const base = String(Reflect.getMetadata(PATH_METADATA, metatype) ?? '');
      for (const name of this.scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
        const handler = (instance as Record<string, unknown>)[name] as object;
        const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (path === undefined || method === undefined) continue;
        routes.push({
          method: RequestMethod[method].toLowerCase(),
          path: joinPath(base, path),
          doc: this.reflector.get<RouteDoc | undefined>(API_DOC, handler as never),
          isPublic: isPublicRoute(this.reflector, handler as never, metatype),
        });
      }
    }
    return routes.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
  }

  document(): Record<string, unknown> {
    return (this.cached ??= this.build());
  }

  private build(): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const route of this.routes()) {
      const key = route.path.replace(/:(\w+)/g, '{$1}');
      (paths[key] ??= {})[route.method] = operation(route);
    }
    return {
      openapi: '3.1.0',
      info: {
        title: 'Steerline',
        version: '1',
        description: 'Redirect an AI agent while it works. Errors are {error: {code, message, …}}; each code has one HTTP status.',
      },
      components: {
        securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'STEERLINE_API_KEYS; unset: the API is open as tenant "default"' } },
        schemas: { Error: ErrorSchema },
      },
      paths,
    };
  }
}

function operation(route: DocumentedRoute): Record<string, unknown> {
  const doc = route.doc ?? { summary: `${route.method.toUpperCase()} ${route.path}`, responses: { 200: 'OK' } };
  const parameters = [
    ...[...route.path.matchAll(/:(\w+)/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' } })),
    ...Object.entries(doc.query ?? {}).map(([name, q]) => ({ name, in: 'query', required: false, description: q.description, schema: q.schema ?? { type: 'string' } })),
    ...Object.entries(doc.headers ?? {}).map(([name, h]) => ({ name, in: 'header', required: false, description: h.description, schema: h.schema ?? { type: 'string' } })),
  ];
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(doc.responses)) responses[status] = responseObject(Number(status), response);
  if (!route.isPublic) responses['401'] ??= errorResponse('unauthorized: no or an unknown API key');
  return {
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(doc.body
      ? { requestBody: { required: !doc.bodyOptional, content: { 'application/json': { schema: jsonSchema(doc.body) } } } }
      : {}),
    responses,
    security: route.isPublic ? [] : [{ apiKey: [] }],
  };
}

function responseObject(status: number, response: ResponseDoc): unknown {
  const { description, schema, contentType } = typeof response === 'string' ? { description: response, schema: undefined, contentType: undefined } : response;
  if (status >= 400) return errorResponse(description);
  if (!schema) return { description };
  return { description, content: { [contentType ?? 'application/json']: { schema: schema instanceof z.ZodType ? jsonSchema(schema) : schema } } };
}

function errorResponse(description: string): unknown {
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

/** What a client sends (`io: input`): transforms and defaults are the server's business. */
export function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  return rest;
}

function joinPath(base: string, path: string): string {
  return `/${[base, path].map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/')}`;
}

import { Inject, Injectable } from '@nestjs/common';
import { PATH_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ERROR_CODES } from '@steerline/contracts';
import { isPublicRoute } from '../auth/auth.guard';
import { API_DOC, type RouteDoc } from './api-doc';
import { operation, type DocumentedRoute } from './operation';
import { TAGS } from './operations';

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
        description:
          'Redirect an AI agent while it works. Every steer ends in exactly one receipt: delivered (with the step and boundary) or dropped (with the reason and its text). ' +
          'Errors are {error: {code, message, …}}; each code has one HTTP status. With STEERLINE_API_KEYS set, send `Authorization: Bearer <key>`.',
        contact: { name: 'Steerline maintainers' },
        license: { name: 'UNLICENSED (private)' },
      },
      // Relative: the document describes whichever gateway serves it, so "try it" calls that gateway.
      servers: [{ url: '/', description: 'This gateway' }],
      tags: TAGS.map((t) => ({ ...t })),
      security: [{ apiKey: [] }],
      components: {
        securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'STEERLINE_API_KEYS; unset: the API is open as tenant "default"' } },
        schemas: { Error: ErrorSchema },
      },
      paths,
    };
  }
}

function joinPath(base: string, path: string): string {
  return `/${[base, path].map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/')}`;
}

import { SetMetadata } from '@nestjs/common';
import type { z } from 'zod';

export const API_DOC = 'steerline:api-doc';

/** A response: its description, and the schema of its body (a zod schema, or JSON Schema) under each media type it is sent as (default JSON). */
export type ResponseDoc = string | { description: string; schema?: z.ZodType | object; contentType?: string | readonly string[] };

/** What the OpenAPI document says about one route, next to the route itself. */
export interface RouteDoc {
  summary: string;
  description?: string;
  /** The JSON body, as the route validates it. */
  body?: z.ZodType;
  bodyOptional?: boolean;
  /** Path parameters that are not ids (an id is a UUID, the default). */
  params?: Record<string, { description: string; schema: object; example?: string }>;
  query?: Record<string, { description: string; schema?: object }>;
  headers?: Record<string, { description: string; schema?: object }>;
  responses: Record<number, ResponseDoc>;
}

/** Documents a route; the OpenAPI document is built from these and Nest's own route metadata. */
export const ApiDoc = (doc: RouteDoc) => SetMetadata(API_DOC, doc);

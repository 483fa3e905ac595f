import { createParamDecorator, Injectable, type ArgumentMetadata, type ExecutionContext, type PipeTransform } from '@nestjs/common';
import { isUuid, parseBody, SteerlineError } from '@steerline/contracts';
import { z } from 'zod';
import type { HttpRequest } from './http.types';

/** Media types the JSON body parser reads; anything else on a body route is refused. */
export const JSON_MEDIA_TYPES = ['application/json', 'application/*+json'];

/**
 * Path ids must be UUIDs. They are lower-cased because they become NATS
 * subjects, which compare case-sensitively, and every id Steerline mints is
 * lower-case.
 */
@Injectable()
export class UuidPipe implements PipeTransform<unknown, string> {
  transform(value: unknown, meta: ArgumentMetadata): string {
    if (!isUuid(value)) throw new SteerlineError('invalid_request', `${meta.data ?? 'id'} must be a UUID`);
    return value.toLowerCase();
  }
}

/** A model's tool call id travels in the body, not a subject: any printable id of 1–256 characters. */
@Injectable()
export class ToolCallIdPipe implements PipeTransform<unknown, string> {
  transform(value: unknown, meta: ArgumentMetadata): string {
    if (typeof value !== 'string' || !/^[\x21-\x7e]{1,256}$/.test(value)) {
      throw new SteerlineError('invalid_request', `${meta.data ?? 'id'} must be 1–256 printable characters`);
    }
    return value;
  }
}

interface BodySpec {
  // Not named `schema`: Nest 12 reads `{schema}` as its own Standard Schema option.
  bodySchema: z.ZodType;
  optional: boolean;
}

const ValidatedJsonBody = createParamDecorator((spec: BodySpec, ctx: ExecutionContext) => {
  const req = ctx.switchToHttp().getRequest<HttpRequest>();
  return parseBody(spec.bodySchema, readJson(req, spec.optional));
});

/**
 * The request's JSON body, validated by `schema`; every failure is
 * `invalid_request`. `optional`: a request without a body is read as `{}`.
 */
export const JsonBody = (schema: z.ZodType, opts: { optional?: boolean } = {}) =>
  ValidatedJsonBody({ bodySchema: schema, optional: opts.optional ?? false });

function readJson(req: HttpRequest, optional: boolean): unknown {
  if (!hasBody(req)) {
    if (optional) return {};
    throw new SteerlineError('invalid_request', 'a JSON request body is required');
  }
  if (!req.is(JSON_MEDIA_TYPES)) throw new SteerlineError('invalid_request', 'the request body must be JSON (Content-Type: application/json)');
  return req.body;
}

function hasBody(req: HttpRequest): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** A UUID in a body, lower-cased for the same reason as in `UuidPipe`. */
export const bodyUuid = () => z.uuid().transform((v) => v.toLowerCase());

import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { BODY_MAX_BYTES, HTTP_STATUS, SteerlineError, type ErrorBody } from '@steerline/contracts';
import { noteIds, type HttpRequest, type HttpResponse } from './http.types';

/**
 * The one place an error becomes an HTTP answer: `{error: {code, message, …}}`
 * with the status the contract gives the code. Client mistakes caught by Nest
 * or Fastify (oversized bodies, unknown routes and methods) are given a
 * contract code too, so nothing a client does wrong surfaces as a 5xx.
 */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly log = new Logger('http');

  catch(err: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<HttpResponse>();
    const body = errorBodyOf(err);
    if (body.code === 'internal') this.log.error('unhandled error', err);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const { steerId, turnId } = body;
    noteIds(host.switchToHttp().getRequest<HttpRequest>(), { steerId: steerId as string, turnId: turnId as string });
    if (body.code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer realm="steerline"');
    if ((body.code === 'rate_limited' || body.code === 'unavailable') && typeof body.retryAfterSeconds === 'number') res.setHeader('Retry-After', String(body.retryAfterSeconds));
    res.status(HTTP_STATUS[body.code]).json({ error: body });
  }
}

export function errorBodyOf(err: unknown): ErrorBody {
  if (err instanceof SteerlineError) return err.toBody();
  if (err instanceof HttpException) return fromHttpException(err);
  return { code: 'internal', message: 'internal error' };
}

// Fastify's errors (a body over its limit) reach here as HttpExceptions with
// their status; the gateway's JSON parser throws SteerlineErrors itself.
function fromHttpException(err: HttpException): ErrorBody {
  const status = err.getStatus();
  if (status === 413) return { code: 'payload_too_large', message: `the request body is larger than ${BODY_MAX_BYTES} bytes` };
  if (status === 404) return { code: 'not_found', message: err.message };
  if (status === 401) return { code: 'unauthorized', message: err.message };
  if (status === 429) return { code: 'rate_limited', message: err.message };
  if (status >= 400 && status < 500) return { code: 'invalid_request', message: err.message };
  if (status === 503) return { code: 'unavailable', message: err.message };
  return { code: 'internal', message: 'internal error' };
}

import { uuidv7 } from '@steerline/contracts';
import { type Logger } from '@steerline/runtime';
import { pinoHttp } from 'pino-http';
import type { HttpRequest, HttpResponse } from '../http/http.types';
import type { GatewayMetrics } from './metrics';

// A caller's own request id is kept when it is a plausible one, so a trace can
// cross the gateway; anything else is replaced rather than logged verbatim.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Middleware (Node's request and response), first in the chain: gives every request an id (echoed in
 * `X-Request-Id`), observes its duration, and — through pino-http — writes one
 * log line when its answer is done:
 * `{"message":"request","requestId","method","route","status","durationMs",…}`
 * with the tenant, conversation, turn and steer ids that became known on the
 * way (a warning for a 5xx; `clientGone` when the client left first).
 */
export function requestLog(logger: Logger, metrics: GatewayMetrics) {
  const record = (req: HttpRequest, res: HttpResponse, durationMs: number) => {
    const { route = 'unmatched', requestId: _id, ...ids } = req.observed ?? { requestId: '' };
    return { context: 'http', method: req.method, route, status: res.statusCode, ...ids, durationMs, ...(res.writableFinished ? {} : { clientGone: true }) };
  };
  const logRequest = pinoHttp({
    logger,
    genReqId: (req) => (req as HttpRequest).observed?.requestId ?? '',
    // The id is bound once; pino-http's `req` and `res` objects are not logged at all
    // (serialising a request's headers on every request costs more than the line itself).
    quietReqLogger: true,
    quietResLogger: true,
    wrapSerializers: false,
    serializers: { req: () => undefined, res: () => undefined },
    customAttributeKeys: { reqId: 'requestId' },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'warn' : 'info'),
    customSuccessMessage: () => 'request',
    customErrorMessage: () => 'request',
    customSuccessObject: (req, res, val: { responseTime: number }) => record(req as HttpRequest, res as HttpResponse, val.responseTime),
    customErrorObject: (req, res, _err, val: { responseTime: number }) => record(req as HttpRequest, res as HttpResponse, val.responseTime),
  });
  return (req: HttpRequest, res: HttpResponse, next: () => void): void => {
    const started = performance.now();
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : uuidv7();
    req.observed = { requestId };
    res.setHeader('X-Request-Id', requestId);
    res.once('close', () => {
      const route = req.observed?.route ?? 'unmatched';
      metrics.httpDuration.observe({ method: req.method ?? 'GET', route, status: String(res.statusCode) }, (performance.now() - started) / 1000);
    });
    logRequest(req, res, next);
  };
}

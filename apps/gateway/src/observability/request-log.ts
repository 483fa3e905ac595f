import { uuidv7 } from '@steerline/contracts';
import { type Logger } from '@steerline/runtime';
import type { HttpRequest, HttpResponse } from '../http/http.types';
import type { GatewayMetrics } from './metrics';

// A caller's own request id is kept when it is a plausible one, so a trace can
// cross the gateway; anything else is replaced rather than logged verbatim.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Middleware (Node's request and response), first in the chain: gives every request an id (echoed in
 * `X-Request-Id`), observes its duration, and writes one log line when its answer is done:
 * `{"message":"request","requestId","method","route","status","durationMs",…}`
 * with the tenant, conversation, turn and steer ids that became known on the
 * way (a warning for a 5xx or a response error; `clientGone` when the client left first).
 *
 * The line is written straight to the logger, the line pino-http wrote (the same fields in the same
 * order, `durationMs` in whole milliseconds): pino-http made two child loggers and three listeners
 * per request for a line whose request and response it was told not to serialise (issue 34).
 */
export function requestLog(logger: Logger, metrics: GatewayMetrics) {
  const write = (req: HttpRequest, res: HttpResponse, requestId: string, startedAt: number, err?: unknown) => {
    const { route = 'unmatched', requestId: _id, ...ids } = req.observed ?? { requestId: '' };
    const level = err || res.statusCode >= 500 ? 'warn' : 'info';
    const durationMs = Date.now() - startedAt;
    logger[level]({ requestId, context: 'http', method: req.method, route, status: res.statusCode, ...ids, durationMs, ...(res.writableFinished ? {} : { clientGone: true }) }, 'request');
  };
  return (req: HttpRequest, res: HttpResponse, next: () => void): void => {
    const started = performance.now();
    const startedAt = Date.now();
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : uuidv7();
    req.observed = { requestId };
    res.setHeader('X-Request-Id', requestId);
    let logged = false;
    // The first of finish, close and error writes the line, once.
    const done = (err?: unknown) => {
      if (logged) return;
      logged = true;
      write(req, res, requestId, startedAt, err);
    };
    res.once('finish', () => done());
    res.once('error', done);
    res.once('close', () => {
      done();
      const route = req.observed?.route ?? 'unmatched';
      metrics.httpDuration.observe({ method: req.method ?? 'GET', route, status: String(res.statusCode) }, (performance.now() - started) / 1000);
    });
    next();
  };
}

import type { LoggerService } from '@nestjs/common';
import { uuidv7 } from '@steerline/contracts';
import type { HttpRequest, HttpResponse } from '../http/http.types';
import type { GatewayMetrics } from './metrics';

// A caller's own request id is kept when it is a plausible one, so a trace can
// cross the gateway; anything else is replaced rather than logged verbatim.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Express middleware, first in the chain: gives every request an id (echoed in
 * `X-Request-Id`), and when its answer is done writes one JSON log line with the
 * tenant, conversation, turn and steer ids that became known on the way, and
 * observes its duration.
 */
export function requestLog(logger: LoggerService, metrics: GatewayMetrics) {
  return (req: HttpRequest, res: HttpResponse, next: () => void): void => {
    const started = performance.now();
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : uuidv7();
    req.observed = { requestId };
    res.setHeader('X-Request-Id', requestId);
    res.once('close', () => {
      const seconds = (performance.now() - started) / 1000;
      const { route = 'unmatched', ...ids } = req.observed ?? { requestId };
      const status = res.statusCode;
      metrics.httpDuration.observe({ method: req.method ?? 'GET', route, status: String(status) }, seconds);
      const record = { ...ids, method: req.method, route, status, durationMs: Math.round(seconds * 1000), ...(res.writableFinished ? {} : { clientGone: true }) };
      if (status >= 500) logger.warn?.('request', record, 'http');
      else logger.log('request', record, 'http');
    });
    next();
  };
}

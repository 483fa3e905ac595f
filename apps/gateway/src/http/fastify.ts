import type { IncomingMessage, ServerResponse } from 'node:http';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { BODY_MAX_BYTES, SteerlineError } from '@steerline/contracts';
import { noteIds, type HttpRequest } from './http.types';
import { JSON_MEDIA_TYPES } from './params';

/** The JSON media types of `JSON_MEDIA_TYPES` as Fastify content-type matchers. */
const JSON_TYPES = /^application\/(json|[^;\s/]+\+json)\s*(;|$)/i;

type Reply = Record<string | symbol, any> & { raw: ServerResponse; hijack(): void; header(n: string, v: unknown): unknown; getHeaders(): Record<string, unknown>; send(b?: unknown): unknown };
type Req = Record<string | symbol, any> & { raw: IncomingMessage & { observed?: unknown }; headers: IncomingMessage['headers']; routeOptions?: { url?: string } };

/**
 * The gateway's HTTP server: Fastify under Nest. Its request and reply are given
 * the slice of Node's and Express's API the gateway's code uses (`HttpRequest`,
 * `HttpResponse` in http.types.ts), so controllers, guards and the event streams
 * do not depend on the framework:
 * - a reply's `setHeader`/`status`/`json` go through Fastify; `writeHead` takes the
 *   response over from Fastify (`hijack`) with the headers set so far, for a stream
 *   the handler writes itself (`write`, `end`, the writable state, `close`) on the socket;
 *   a first `write` without `writeHead` takes it over the same way;
 * - a request's `route.path` is the route's template, `is()` tests its media type.
 * JSON bodies are read by our own parser (the contract's size limit; an empty body
 * reads as none); bodies of any other type are left unread, as `JsonBody` refuses them.
 */
export function gatewayHttpAdapter(): FastifyAdapter {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_MAX_BYTES,
    logger: false,
    // The request log makes the request id (X-Request-Id); Fastify's own is not used.
    genReqId: () => '',
    // Shutdown: requests that arrive while the server closes still get their answer (http/connections.ts ends idle sockets).
    return503OnClosing: false,
    // A client's Connection: close is honoured by Node; idle sockets are ended by http/connections.ts at shutdown.
    forceCloseConnections: false,
  });
  const f = adapter.getInstance();
  f.removeAllContentTypeParsers();
  f.addContentTypeParser(JSON_TYPES, { parseAs: 'string', bodyLimit: BODY_MAX_BYTES }, (req, body: string | Buffer, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) return done(new SteerlineError('invalid_request', `the request body must be UTF-8 JSON, not charset ${charset}`), undefined);
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new SteerlineError('invalid_request', 'the request body is not valid JSON'), undefined);
    }
  });
  // Anything else stays unread; JsonBody answers invalid_request on a body route.
  f.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

  const reply = (name: string, value: unknown) => f.decorateReply(name, value as never);
  const request = (name: string, value: unknown) => f.decorateRequest(name, value as never);
  const rawGetter = (prop: keyof ServerResponse) => ({
    getter(this: Reply) {
      return this.raw[prop];
    },
  });
  reply('setHeader', function (this: Reply, name: string, value: unknown) {
    if (this.raw.headersSent) this.raw.setHeader(name, value as string);
    else this.header(name, value);
    return this;
  });
  reply('json', function (this: Reply, body: unknown) {
    return this.send(body);
  });
  reply('writeHead', function (this: Reply, status: number, headers: Record<string, string> = {}) {
    this.hijack();
    this.raw.writeHead(status, { ...(this.getHeaders() as Record<string, string>), ...headers });
    return this;
  });
  reply('write', function (this: Reply, chunk: string | Uint8Array) {
    // A body written without writeHead first (the conversation stream) takes the
    // response over here, or Node would send its implicit head without the
    // headers set through Fastify, Content-Type among them.
    if (!this.raw.headersSent) (this as unknown as { writeHead(status: number): unknown }).writeHead(this.statusCode as number);
    return this.raw.write(chunk);
  });
  reply('end', function (this: Reply, body?: string | Uint8Array) {
    if (this.raw.headersSent) this.raw.end(body);
    else this.send(body ?? '');
    return this;
  });
  reply('destroy', function (this: Reply) {
    this.raw.destroy();
  });
  for (const method of ['on', 'once', 'off'] as const) {
    reply(method, function (this: Reply, event: string, listener: (...args: unknown[]) => void) {
      (this.raw[method] as (e: string, l: (...args: unknown[]) => void) => unknown)(event, listener);
      return this;
    });
  }
  for (const prop of ['headersSent', 'writableEnded', 'writableFinished', 'writableLength', 'destroyed', 'closed', 'socket'] as const) reply(prop, rawGetter(prop));

  // The request log's ids live on Node's request (it runs before Fastify routes).
  request('observed', {
    getter(this: Req) {
      return this.raw.observed;
    },
  });
  request('route', {
    getter(this: Req) {
      return { path: this.routeOptions?.url };
    },
  });
  request('is', function (this: Req, types: string[]) {
    return mediaTypeIs(this.headers['content-type'], types);
  });
  request('tenantId', undefined);
  request('clientKey', undefined);
  // The ids a successful answer carries (a receipt's steerId and turnId, a new turn's turnId, a turn's
  // conversationId) go into the request's log line, so a steer whose id the gateway chose can be found
  // in the logs. A hook on the body Fastify is about to serialise, not a Nest interceptor: Nest runs a
  // route with an interceptor through rxjs (observables, a ReplaySubject) on every request (issue 34).
  f.addHook('preSerialization', (req: Req, rep: Reply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if ((rep.statusCode as number) < 400 && payload && typeof payload === 'object') {
      const { steerId, turnId, conversationId } = payload as Record<string, unknown>;
      noteIds(req as unknown as HttpRequest, { steerId: steerId as string, turnId: turnId as string, conversationId: conversationId as string });
    }
    done(null, payload);
  });
  return adapter;
}

/** The request's media type when it is one of `types` (exact, or `application/*+json`), else false. */
export function mediaTypeIs(contentType: string | undefined, types: readonly string[] = JSON_MEDIA_TYPES): string | false {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (!type) return false;
  const match = types.some((t) => (t.includes('*') ? new RegExp(`^${t.replace(/[.+]/g, '\\$&').replace('*', '[^/]+')}$`).test(type) : t === type));
  return match ? type : false;
}

/** A middleware on Node's request and response, the shape `requestLog`, `securityHeaders` and `consoleAssets` have. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type NodeMiddleware = (req: any, res: any, next: () => void) => void;
type Fastify = FastifyInstance;

/**
 * Runs `middlewares` on Node's request and response, in order, first thing for every request (routed
 * or not, a body refused or not): one `onRequest` hook, where Nest's `app.use` put them in
 * @fastify/middie, whose engine copied six request fields (`ip`, `ips`, `hostname`…), percent-decoded
 * and matched the path, and pooled a holder per request for middleware that match every path (issue 34).
 */
export function onEveryRequest(f: Fastify, ...middlewares: NodeMiddleware[]): void {
  f.addHook('onRequest', (req, reply, done) => {
    let i = 0;
    const next = (): void => {
      const m = middlewares[i++];
      if (m) m(req.raw, reply.raw, next);
      else done();
    };
    next();
  });
}

const CONSOLE = '/console';

/**
 * Serves the console's files (`consoleAssets`, which answers on Node's response) under /console, as a
 * mount did: the middleware sees the path below the mount ("/" for /console and /console/), the query
 * kept. GET only (and the HEAD Fastify adds for it, whose body Node leaves out); any other method there
 * is not found, as before. Outside Nest's routes: no auth guard, not in /docs.
 */
export function serveConsole(f: Fastify, files: NodeMiddleware): void {
  const handler = (req: Req & { params: Record<string, string> }, reply: Reply) => {
    reply.hijack();
    const raw = req.raw;
    const url = raw.url ?? CONSOLE;
    // The path as sent when it starts with the mount; a percent-encoded one as the router decoded it.
    const below = url.startsWith(CONSOLE) ? url.slice(CONSOLE.length) : `/${req.params['*'] ?? ''}`;
    raw.url = below[0] === '/' ? below : `/${below}`;
    files(raw, reply.raw, () => {
      raw.url = url;
    });
    raw.url = url;
  };
  f.get(CONSOLE, handler as never);
  f.get(`${CONSOLE}/*`, handler as never);
}

import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The slice of a request and a response the gateway's code uses: Node's, plus
 * a few of Express's names. Fastify's request and reply are given these in
 * http/fastify.ts, so no controller, guard or stream depends on the framework.
 */
export interface HttpRequest extends IncomingMessage {
  body?: unknown;
  params: Record<string, string>;
  query: Record<string, unknown>;
  is(types: string[]): string | false | null;
  /** Set by the auth guard on every route that is not public. */
  tenantId?: string;
  /** Set by the auth guard: who per-client limits count against (`key:<id>`, or `addr:<address>` on an open API). */
  clientKey?: string;
  /** Set once a route matched; its `path` is the template (`/v1/turns/:tid`). */
  route?: { path?: unknown };
  /** Ids for the request's log line and metrics, filled in along the way (see `noteIds`). */
  observed?: ObservedRequest;
}

export interface ObservedRequest {
  requestId: string;
  route?: string;
  tenantId?: string;
  conversationId?: string;
  turnId?: string;
  steerId?: string;
}

/** Adds ids to the request's log line; unset values are ignored. */
export function noteIds(req: HttpRequest, ids: Partial<Omit<ObservedRequest, 'requestId'>>): void {
  if (!req.observed) return;
  for (const [key, value] of Object.entries(ids)) if (typeof value === 'string' && value) (req.observed as unknown as Record<string, string>)[key] = value;
}

export interface HttpResponse extends ServerResponse {
  status(code: number): this;
  json(body: unknown): this;
}

/**
 * Aborts when the client goes away before its answer is written, so a long
 * `Prefer: wait` stops holding a waiter for nobody (docs/design.md §2.16: the steer
 * itself is unaffected).
 */
export function clientGone(res: HttpResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The slice of Express's request and response the gateway uses. Declared here
 * because the project does not depend on @types/express.
 */
export interface HttpRequest extends IncomingMessage {
  body?: unknown;
  params: Record<string, string>;
  query: Record<string, unknown>;
  is(types: string[]): string | false | null;
  /** Set by the auth guard on every route that is not public. */
  tenantId?: string;
}

export interface HttpResponse extends ServerResponse {
  status(code: number): this;
  json(body: unknown): this;
}

/**
 * Aborts when the client goes away before its answer is written, so a long
 * `Prefer: wait` stops holding a waiter for nobody (DESIGN §2.15: the steer
 * itself is unaffected).
 */
export function clientGone(res: HttpResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

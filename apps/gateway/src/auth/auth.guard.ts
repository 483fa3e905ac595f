import { createParamDecorator, Inject, Injectable, Optional, SetMetadata, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { SteerlineError } from '@steerline/contracts';
import { noteIds, type HttpRequest } from '../http/http.types';
import { SharedRateLimiter } from '../rate-limit/shared-rate-limiter';
import { ApiKeys } from './api-keys';

const PUBLIC_ROUTE = 'steerline:public';

/** Marks a controller or route as needing no API key (health probes, metrics, docs). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export function isPublicRoute(reflector: Reflector, handler: Function, controller: Function): boolean {
  return reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [handler, controller]) === true;
}

/**
 * Resolves the caller's tenant from its API key and takes a token from the
 * key's rate-limit bucket, shared by every gateway; registered as the global guard. Public routes are
 * neither authenticated nor limited: probes must not be starved by traffic.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ApiKeys) private readonly keys: ApiKeys,
    @Optional() @Inject(SharedRateLimiter) private readonly limiter?: SharedRateLimiter,
  ) {}

  // Whether a route is public is fixed once the app is built: looked up once per controller and
  // handler (a handler inherited by another controller is asked again), not per request (issue 34).
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  private readonly publicRoutes = new WeakMap<Function, WeakMap<Function, boolean>>();

  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<HttpRequest>();
    // Guards run once a route matched: the template and path ids are known here.
    noteIds(req, {
      route: typeof req.route?.path === 'string' ? req.route.path : undefined,
      conversationId: req.params?.cid,
      turnId: req.params?.tid,
      steerId: req.params?.sid,
    });
    if (this.isPublic(ctx.getHandler(), ctx.getClass())) return true;
    const { tenantId, keyId } = this.keys.identify(req.headers.authorization);
    req.tenantId = tenantId;
    noteIds(req, { tenantId });
    // An open API has no keys: its callers are told apart by address.
    req.clientKey = keyId ? `key:${keyId}` : `addr:${req.socket.remoteAddress ?? 'unknown'}`;
    // Usually decided at once from tokens leased here; otherwise after one shared-store round trip.
    const limited = this.limiter?.take(req.clientKey);
    return limited ? limited.then(() => true) : true;
  }

  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  private isPublic(handler: Function, controller: Function): boolean {
    let handlers = this.publicRoutes.get(controller);
    if (!handlers) this.publicRoutes.set(controller, (handlers = new WeakMap()));
    let known = handlers.get(handler);
    if (known === undefined) handlers.set(handler, (known = isPublicRoute(this.reflector, handler, controller)));
    return known;
  }
}

/** The tenant the auth guard resolved; it goes into every command and query. */
export const Tenant = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const tenantId = ctx.switchToHttp().getRequest<HttpRequest>().tenantId;
  // Only reachable if a public route asked for a tenant: a wiring mistake, not a client's.
  if (tenantId === undefined) throw new SteerlineError('internal', 'no tenant resolved for this route');
  return tenantId;
});

import { createParamDecorator, Inject, Injectable, SetMetadata, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { SteerlineError } from '@steerline/contracts';
import type { HttpRequest } from '../http/http.types';
import { ApiKeys } from './api-keys';

const PUBLIC_ROUTE = 'steerline:public';

/** Marks a controller or route as needing no API key (health probes). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

/** Resolves the caller's tenant from its API key; registered as the global guard. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ApiKeys) private readonly keys: ApiKeys,
  ) {}

  canActivate(ctx: ExecutionContext): boolean {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [ctx.getHandler(), ctx.getClass()])) return true;
    const req = ctx.switchToHttp().getRequest<HttpRequest>();
    req.tenantId = this.keys.tenantFor(req.headers.authorization);
    return true;
  }
}

/** The tenant the auth guard resolved; it goes into every command and query. */
export const Tenant = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const tenantId = ctx.switchToHttp().getRequest<HttpRequest>().tenantId;
  // Only reachable if a public route asked for a tenant: a wiring mistake, not a client's.
  if (tenantId === undefined) throw new SteerlineError('internal', 'no tenant resolved for this route');
  return tenantId;
});

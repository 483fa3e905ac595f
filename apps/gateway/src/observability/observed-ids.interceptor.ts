import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { map, type Observable } from 'rxjs';
import { noteIds, type HttpRequest } from '../http/http.types';

/**
 * Picks the ids an answer carries (a receipt's steerId and turnId, a new
 * turn's turnId, a turn's conversationId) into the request's log line, so a
 * steer whose id the gateway chose can be found in the logs.
 */
@Injectable()
export class ObservedIdsInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = ctx.switchToHttp().getRequest<HttpRequest>();
    return next.handle().pipe(
      map((body: unknown) => {
        if (body && typeof body === 'object') {
          const { steerId, turnId, conversationId } = body as Record<string, unknown>;
          noteIds(req, { steerId: steerId as string, turnId: turnId as string, conversationId: conversationId as string });
        }
        return body;
      }),
    );
  }
}

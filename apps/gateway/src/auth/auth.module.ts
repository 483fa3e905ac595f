import { Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { RateLimit } from '../config';
import { RateLimiter } from '../rate-limit/token-bucket';
import { ApiKeys } from './api-keys';
import { AuthGuard } from './auth.guard';

@Module({})
export class AuthModule {
  static forRoot(keys: ReadonlyMap<string, string> | undefined, rateLimit: RateLimit | undefined): DynamicModule {
    return {
      module: AuthModule,
      providers: [
        { provide: ApiKeys, useValue: new ApiKeys(keys) },
        ...(rateLimit ? [{ provide: RateLimiter, useValue: new RateLimiter(rateLimit) }] : []),
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
    };
  }
}

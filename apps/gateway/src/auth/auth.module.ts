import { Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { RateLimit } from '../config';
import { rateLimiterProvider } from '../rate-limit/rate-limit.provider';
import { ApiKeys } from './api-keys';
import { API_KEYS_SOURCE, ApiKeysFileReloader, readApiKeyFile, type ApiKeysSource } from './api-keys-file';
import { AuthGuard } from './auth.guard';

@Module({})
export class AuthModule {
  /** `keys` from STEERLINE_API_KEYS, `file` the path in STEERLINE_API_KEYS_FILE (read now, reread on SIGHUP). */
  static forRoot(keys: ReadonlyMap<string, string> | undefined, rateLimit: RateLimit | undefined, file?: string): DynamicModule {
    const source: ApiKeysSource = { keys, file };
    return {
      module: AuthModule,
      providers: [
        { provide: API_KEYS_SOURCE, useValue: source },
        { provide: ApiKeys, useValue: new ApiKeys(keys, file ? readApiKeyFile(file) : undefined) },
        ApiKeysFileReloader,
        ...(rateLimit ? [rateLimiterProvider(rateLimit)] : []),
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
    };
  }
}

import { Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeys } from './api-keys';
import { AuthGuard } from './auth.guard';

@Module({})
export class AuthModule {
  static forRoot(keys: ReadonlyMap<string, string> | undefined): DynamicModule {
    return {
      module: AuthModule,
      providers: [{ provide: ApiKeys, useValue: new ApiKeys(keys) }, { provide: APP_GUARD, useClass: AuthGuard }],
    };
  }
}

import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { DocsController } from './docs.controller';
import { OpenApiBuilder } from './openapi';

@Module({ imports: [DiscoveryModule], controllers: [DocsController], providers: [OpenApiBuilder] })
export class DocsModule {}

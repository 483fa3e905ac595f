import { Controller, Get, Headers, Inject, Param, Query, Res, StreamableFile } from '@nestjs/common';
import { SteerlineError } from '@steerline/contracts';
import { Public } from '../auth/auth.guard';
import type { HttpResponse } from '../http/http.types';
import { ApiDoc } from './api-doc';
import { OpenApiBuilder } from './openapi';
import { ASSET_MEDIA_TYPES, REFERENCE_ASSETS, REFERENCE_CSP, REFERENCE_PAGE, wantsPlainPage } from './reference-page';

/**
 * The API described by itself: OpenAPI JSON, an interactive reference for
 * browsers and a plain page listing the routes for terminals (no external assets).
 */
@Public()
@Controller('docs')
export class DocsController {
  constructor(@Inject(OpenApiBuilder) private readonly openapi: OpenApiBuilder) {}

  @Get('openapi.json')
  @ApiDoc({ summary: 'This document (OpenAPI 3.1)', responses: { 200: { description: 'OpenAPI 3.1', schema: { type: 'object' } } } })
  document(): Record<string, unknown> {
    return this.openapi.document();
  }

  @Get()
  @ApiDoc({
    summary: 'The API reference: interactive in a browser, a plain list of routes with ?plain or without Accept: text/html',
    query: { plain: { description: 'present (no value needed): the plain page', schema: { type: 'string' } } },
    responses: { 200: { description: 'HTML', contentType: 'text/html', schema: { type: 'string' } } },
  })
  page(@Query() query: Record<string, unknown>, @Headers('accept') accept: string | undefined, @Res({ passthrough: true }) res: HttpResponse): string {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Vary', 'Accept');
    if (wantsPlainPage(query, accept)) return this.plainPage();
    res.setHeader('Content-Security-Policy', REFERENCE_CSP);
    return REFERENCE_PAGE;
  }

  @Get('assets/:file')
  @ApiDoc({
    summary: 'A file of the interactive reference',
    params: { file: { description: 'the file name', schema: { type: 'string', enum: Object.keys(REFERENCE_ASSETS) }, example: 'swagger-ui.css' } },
    responses: { 200: { description: 'the file', contentType: ASSET_MEDIA_TYPES, schema: { type: 'string' } }, 404: 'not_found: no such file' },
  })
  asset(@Param('file') file: string, @Res({ passthrough: true }) res: HttpResponse): StreamableFile | string {
    const asset = Object.hasOwn(REFERENCE_ASSETS, file) ? REFERENCE_ASSETS[file] : undefined;
    if (!asset) throw new SteerlineError('not_found', `no reference asset ${file}`);
    res.setHeader('Content-Type', asset.contentType);
    res.setHeader('Cache-Control', 'public, max-age=3600');
    const body = asset.open();
    return typeof body === 'string' ? body : new StreamableFile(body);
  }

  private plainPage(): string {
    const rows = this.openapi
      .routes()
      .map((r) => {
        const statuses = Object.keys(r.doc?.responses ?? {}).join(' ');
        return `<tr><td>${r.method.toUpperCase()}</td><td><code>${escape(r.path)}</code></td><td>${escape(r.doc?.summary ?? '')}</td><td>${statuses}</td></tr>`;
      })
      .join('\n');
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Steerline API</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem}td,th{padding:.3rem .8rem;text-align:left;border-bottom:1px solid #ddd}</style></head>
<body><h1>Steerline API</h1>
<p>The machine-readable document is <a href="/docs/openapi.json">/docs/openapi.json</a> (OpenAPI 3.1); a browser gets the interactive reference at <a href="/docs">/docs</a>. Errors are <code>{"error": {"code", "message"}}</code>.</p>
<table><thead><tr><th>method</th><th>path</th><th>what</th><th>statuses</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>
`;
  }
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
}

import { Controller, Get, Header, Inject } from '@nestjs/common';
import { Public } from '../auth/auth.guard';
import { ApiDoc } from './api-doc';
import { OpenApiBuilder } from './openapi';

/** The API described by itself: OpenAPI JSON, and a plain page listing the routes (no external assets). */
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
  @ApiDoc({ summary: 'A page listing the routes', responses: { 200: { description: 'HTML', contentType: 'text/html', schema: { type: 'string' } } } })
  @Header('Content-Type', 'text/html; charset=utf-8')
  page(): string {
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
<p>The machine-readable document is <a href="/docs/openapi.json">/docs/openapi.json</a> (OpenAPI 3.1). Errors are <code>{"error": {"code", "message"}}</code>.</p>
<table><thead><tr><th>method</th><th>path</th><th>what</th><th>statuses</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>
`;
  }
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
}

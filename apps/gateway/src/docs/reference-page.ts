import { createReadStream } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';

/**
 * The interactive reference at /docs: Swagger UI (swagger-ui-dist, from npm)
 * served from the gateway's own /docs/assets, reading /docs/openapi.json. No
 * file comes from anywhere else, and the page's Content-Security-Policy says so
 * to the browser: scripts, styles, fonts and requests from this origin only
 * (images may also be `data:` URIs, which Swagger UI's stylesheet uses for icons).
 */
export const REFERENCE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

// The page's own script: a file, not inline, so the policy needs no 'unsafe-inline'.
// Swagger UI's validator badge would call an outside service: it is off.
const REFERENCE_SCRIPT = `window.ui = SwaggerUIBundle({
  url: '/docs/openapi.json',
  dom_id: '#reference',
  deepLinking: true,
  validatorUrl: null,
  displayRequestDuration: true,
  showExtensions: true,
  tryItOutEnabled: false,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const REFERENCE_STYLE = `body { margin: 0; font-family: system-ui, sans-serif; }
.steerline-links { margin: 1rem 20px 0; font-size: 14px; }
`;

export const REFERENCE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Steerline API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="stylesheet" href="/docs/assets/reference.css">
</head><body>
<p class="steerline-links">Steerline API · <a href="/docs/openapi.json">openapi.json</a> · <a href="/docs?plain">plain list of routes</a></p>
<noscript><p>This reference needs JavaScript; the <a href="/docs?plain">plain list of routes</a> does not.</p></noscript>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/reference.js"></script>
</body></html>
`;

interface Asset {
  contentType: string;
  open(): Readable | string;
}

const swaggerUi = (file: string) => () => createReadStream(join(dirname(require.resolve('swagger-ui-dist/package.json')), file));

/** The files /docs/assets serves, by name; nothing else is reachable there. */
export const REFERENCE_ASSETS: Record<string, Asset> = {
  'swagger-ui-bundle.js': { contentType: 'text/javascript; charset=utf-8', open: swaggerUi('swagger-ui-bundle.js') },
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', open: swaggerUi('swagger-ui.css') },
  'reference.js': { contentType: 'text/javascript; charset=utf-8', open: () => REFERENCE_SCRIPT },
  'reference.css': { contentType: 'text/css; charset=utf-8', open: () => REFERENCE_STYLE },
};

/** The media types of the files above, as the document lists them (without parameters). */
export const ASSET_MEDIA_TYPES = [...new Set(Object.values(REFERENCE_ASSETS).map((a) => a.contentType.split(';')[0]))];

/**
 * Terminals and scripts get the plain page: with `?plain`, or when the client
 * does not ask for HTML (curl sends `Accept: *\/*`). Browsers ask for text/html.
 */
export function wantsPlainPage(query: Record<string, unknown>, accept: string | undefined): boolean {
  return 'plain' in query || !/\btext\/html\b/.test(accept ?? '');
}

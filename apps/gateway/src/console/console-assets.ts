import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Serves the console's built files (apps/console, bundled into dist/console by
 * `npm run build`) at /console. The gateway imports none of the console's
 * code: it hands out files, and the page talks to /v1 like any other client.
 */

/**
 * Self only, nothing inline: the page's one script and one stylesheet come
 * from here, and it may call only this origin's API.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** dist/console of the checkout the gateway runs from (source under Jest, or dist/apps/… after a build). */
export function defaultConsoleDir(from: string = __dirname): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidates = [path.join(dir, 'dist', 'console'), ...(path.basename(dir) === 'dist' ? [path.join(dir, 'console')] : [])];
    const found = candidates.find((c) => existsSync(path.join(c, 'index.html')));
    if (found) return found;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * A middleware for the /console mount (Node's request and response). The files are read once at
 * start-up (a few dozen kB) so a request never touches the disk or a path
 * built from its URL. Unbuilt console: 404 saying how to build it.
 */
export function consoleAssets(dir: string | undefined) {
  const files = new Map<string, { body: Buffer; type: string }>();
  if (dir && existsSync(dir)) {
    for (const name of readdirSync(dir)) {
      const type = TYPES[path.extname(name)];
      if (type) files.set(name, { body: readFileSync(path.join(dir, name)), type });
    }
  }
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    // Under the mount, the rest of the path is left in req.url: "/" or "/console.js".
    const pathname = new URL(req.url ?? '/', 'http://console').pathname;
    const file = files.get(pathname === '/' ? 'index.html' : pathname.slice(1));
    if (!file) {
      const message = files.size ? `no console file ${JSON.stringify(pathname)}` : 'the console is not built: run `npm run build`';
      const body = JSON.stringify({ error: { code: 'not_found', message } });
      res.writeHead(404, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    // Unhashed names: revalidate every time so a new build is never mixed with an old page.
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Content-Type', file.type);
    res.setHeader('Content-Length', file.body.length);
    res.end(req.method === 'HEAD' ? undefined : file.body);
  };
}

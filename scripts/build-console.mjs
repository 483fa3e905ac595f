// Runs in `npm run build`: bundles apps/console into dist/console (index.html,
// console.js, console.css), the files the gateway serves at /console. esbuild
// from npm, pinned; nothing is fetched at build or run time.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const app = path.join(root, 'apps', 'console');
const out = path.join(root, 'dist', 'console');

mkdirSync(out, { recursive: true });
await build({
  entryPoints: [
    { in: path.join(app, 'src', 'main.ts'), out: 'console' },
    { in: path.join(app, 'src', 'console.css'), out: 'console' },
  ],
  outdir: out,
  bundle: true,
  minify: true,
  sourcemap: true,
  format: 'iife',
  target: ['es2022'],
  tsconfig: path.join(app, 'tsconfig.json'),
  logLevel: 'warning',
  legalComments: 'eof',
});
copyFileSync(path.join(app, 'index.html'), path.join(out, 'index.html'));

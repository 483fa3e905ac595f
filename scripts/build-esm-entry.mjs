// An ES-module entry (dist/index.mjs) beside a package's CommonJS build, for a package whose peer
// ships both (@openai/agents): an app that imports the peer as ESM must get the same copy of it
// through the adapter, or the two copies keep separate state (default model provider, tracing).
// `node scripts/build-esm-entry.mjs openai-agents`; the peer and @steerline/* stay imports.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
for (const name of process.argv.slice(2)) {
  const dir = path.join(root, 'libs', name);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  await build({
    entryPoints: [path.join(dir, 'src/index.ts')],
    outfile: path.join(dir, 'dist/index.mjs'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})],
    logLevel: 'warning',
  });
}

// Builds libraries as the packages `npm pack` ships (each library's "prepack"):
// `node scripts/build-package.mjs contracts client` compiles libs/<name>/src to
// libs/<name>/dist, CommonJS with declarations, in the order given (the client's
// declarations are checked against the contracts' built ones).
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
const names = process.argv.slice(2);
if (!names.length) {
  console.error('usage: node scripts/build-package.mjs <lib> [<lib>…]   (a folder of libs/)');
  process.exit(2);
}
for (const name of names) {
  const dir = path.join(root, 'libs', name);
  rmSync(path.join(dir, 'dist'), { recursive: true, force: true });
  const run = spawnSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.lib.json')], { stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(`build-package: libs/${name} did not compile`);
    process.exit(run.status ?? 1);
  }
}

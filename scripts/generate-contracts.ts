// npm run contracts:generate — writes the AsyncAPI document, the JSON Schema of
// every event type at its current version and the cluster stream definition,
// all generated from libs/contracts. It refuses a breaking change to a committed
// event version: that needs a new version and an upcaster (see upcasters.ts).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { checkCommittedSchemas, generatedContractFiles, readCommittedSchemas } from '@steerline/runtime';

/** The repository root: run from source or from dist/, it is where the contracts' sources are. */
function repositoryRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'libs/contracts/src/index.ts'))) return dir;
  }
  throw new Error(`no repository root above ${from}`);
}

function main(): number {
  const root = repositoryRoot(__dirname);
  const refused = checkCommittedSchemas(readCommittedSchemas(root)).filter((p) => p.kind === 'breaking' || p.kind === 'orphan');
  if (refused.length) {
    for (const p of refused) console.error(`contracts:generate: ${p.message}`);
    console.error('contracts:generate: nothing written.');
    return 1;
  }
  for (const [file, text] of generatedContractFiles()) {
    const path = join(root, file);
    if (existsSync(path) && readFileSync(path, 'utf8') === text) continue;
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    console.log(`contracts:generate: wrote ${file}`);
  }
  console.log('contracts:generate: contract files are up to date.');
  return 0;
}

process.exitCode = main();

import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { approve, startStack, type Stack } from '../support/stack';

// Under node_modules, so the client's `import 'openapi-fetch'` resolves to the project's copy.
const ROOT = path.resolve(__dirname, '../..');
const WORK = path.join(ROOT, 'node_modules/.cache/steerline-openapi-client', String(process.pid));
// The generator's own command line, as a user runs it (`npx openapi-typescript openapi.json -o api.d.ts`).
const GENERATOR = path.join(ROOT, 'node_modules/openapi-typescript/bin/cli.js');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const run = promisify(execFile);
const KEY = 'client-key';
const script = [{ tool: { name: 'sleep', args: { ms: 10 } } }, { text: 'done' }];

// A program a user would write against the generated types: a steer through openapi-fetch,
// its answer typed from the document. The @ts-expect-error lines fail the type-check if the
// types were too loose to catch a misspelt field or a wrong path parameter.
const DRIVER = `import createClient from 'openapi-fetch';
import type { paths } from './api.js';

// Only what this program uses of Node, so the type-check need not load all of @types/node.
declare const process: { argv: string[]; env: Record<string, string | undefined> };

const [baseUrl, turnId, key] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });

if (process.env.NEVER) {
  // @ts-expect-error: the body has \`text\`, not \`txt\`
  await client.POST('/v1/turns/{tid}/steers', { params: { path: { tid: turnId } }, body: { txt: 'x' } });
  // @ts-expect-error: the steer route's parameter is \`tid\`
  await client.POST('/v1/turns/{tid}/steers', { params: { path: { turnId } }, body: { text: 'x' } });
}

const { data, error, response } = await client.POST('/v1/turns/{tid}/steers', {
  params: { path: { tid: turnId }, header: { Prefer: 'wait=30' } },
  body: { text: 'Keep the public API unchanged' },
});
const status: 'queued' | 'delivered' | 'dropped' | undefined = data?.status;
const code: string | undefined = error?.error.code;
console.log(JSON.stringify({ http: response.status, status, step: data?.step, boundary: data?.boundary, code }));
`;

describe('a typed client generated from /docs/openapi.json with openapi-typescript and openapi-fetch', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { STEERLINE_API_KEYS: `${KEY}:acme` } });
    rmSync(WORK, { recursive: true, force: true });
    mkdirSync(WORK, { recursive: true });
  });
  afterAll(async () => {
    rmSync(WORK, { recursive: true, force: true });
    await stack?.close();
  });

  it('type-checks a program that steers a running turn, which then gets its delivered receipt through the client', async () => {
    const doc = await (await fetch(`${stack.url}/docs/openapi.json`)).json();
    writeFileSync(path.join(WORK, 'openapi.json'), JSON.stringify(doc));
    await run(process.execPath, [GENERATOR, path.join(WORK, 'openapi.json'), '-o', path.join(WORK, 'api.ts')], { timeout: 30_000 });
    writeFileSync(path.join(WORK, 'driver.mts'), DRIVER);

    // tsc in its own process: a type-check blocks its event loop for seconds, and the stack runs in this one.
    // The generated types are a .ts file, so --skipLibCheck (for lib.dom and the packages) still checks them.
    const flags = ['--ignoreConfig', '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--lib', 'es2022,dom'];
    const checked = await run(process.execPath, [TSC, ...flags, path.join(WORK, 'driver.mts')], { timeout: 60_000, cwd: WORK }).then(() => '', (err: { stdout?: string }) => err.stdout ?? String(err));
    expect(checked).toBe('');

    const cid = (await stack.api('POST', '/conversations', undefined, { authorization: `Bearer ${KEY}` })).body.id;
    // Step 1's call waits for approval until the driver's steer is queued: a node process starting
    // on a loaded machine can take longer than any tool sleep would have given it.
    const auth = { authorization: `Bearer ${KEY}` };
    const turn = await stack.api('POST', `/conversations/${cid}/turns`, { prompt: 'Refactor the parser', model: { provider: 'scripted', script }, approvals: { tools: ['sleep'] } }, auth);
    expect(turn.status).toBe(202);
    const tid = turn.body.turnId as string;

    const js = ts.transpileModule(DRIVER, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    writeFileSync(path.join(WORK, 'driver.mjs'), js);
    const driver = run(process.execPath, [path.join(WORK, 'driver.mjs'), stack.url, tid, KEY], { timeout: 60_000 });
    await stack.turnHas(tid, 'SteerQueued', { timeoutMs: 40_000 });
    await approve(stack, tid, 'call_1_0', auth);
    const { stdout } = await driver;
    expect(JSON.parse(stdout)).toEqual({ http: 200, status: 'delivered', step: 1, boundary: 'tool_results' });
    await stack.turnEnded(tid);
  }, 180_000); // the generator and tsc run as processes: seconds each, more on a loaded machine
});

import { freshProject, packLibs, type FreshProject } from '../support/pack';
import { startStack, type Stack } from '../support/stack';

/**
 * Another project's code, as its author writes it: TypeScript against the
 * installed packages' types, compiled with its own TypeScript and run with
 * node. It steers a turn whose scripted model sleeps (the sleep waits for
 * approval, so the steer surely comes while it runs) and prints the receipt.
 */
const MAIN_TS = `
import { SteerlineClient, SteerlineClientError, type Receipt } from '@steerline/client';
import { isUuid, normalizeSteerText } from '@steerline/contracts';

const client = new SteerlineClient({ baseUrl: process.env.STEERLINE_URL! });

async function main(): Promise<void> {
  const { id: conversationId } = await client.createConversation();
  const turn = await client.startTurn(conversationId, {
    prompt: 'work',
    model: { provider: 'scripted', script: [{ tools: [{ name: 'sleep', args: { ms: 50 } }] }, { text: 'done' }] },
    approvals: { tools: ['sleep'] },
  });
  if (!isUuid(turn.turnId)) throw new Error('not a turn id: ' + turn.turnId);
  for await (const e of client.events(conversationId)) if (e.type === 'ToolApprovalRequested') break;
  const queued: Receipt = await client.steer(turn.turnId, normalizeSteerText('  go left  '));
  await client.approve(turn.turnId, 'call_1_0');
  const receipt = await client.receipt(turn.turnId, queued.steerId, { waitSeconds: 30 });
  // A typed refusal crosses the package boundary as SteerlineClientError with the API's code.
  const refused = await client.getTurn('not-a-turn').then(() => undefined, (err: unknown) => err);
  console.log(JSON.stringify({ turnId: turn.turnId, queued, receipt, refusedWith: refused instanceof SteerlineClientError ? refused.code : String(refused) }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
`;

const TSCONFIG = {
  compilerOptions: { module: 'node20', target: 'ES2023', lib: ['ES2023'], strict: true, outDir: 'out', types: ['node'], skipLibCheck: false },
  include: ['main.ts'],
};

describe('@steerline/contracts and @steerline/client, packed and installed by another project', () => {
  let stack: Stack;
  let app: FreshProject;

  beforeAll(async () => {
    const tarballs = await packLibs(['contracts', 'client']);
    app = await freshProject({
      tarballs,
      // The project's own toolchain, from the registry (the repository's versions).
      packages: ['typescript@6.0.3', '@types/node@20.19.43'],
      files: { 'main.ts': MAIN_TS, 'tsconfig.json': JSON.stringify(TSCONFIG, null, 2) },
    });
    stack = await startStack();
  }, 300_000);
  afterAll(async () => {
    await stack?.close();
    app?.remove();
  });

  it('installs with zod as the only other package: no NATS, pino, Nest or HTTP server', () => {
    const installed = app.installed();
    expect(installed).toEqual(expect.arrayContaining(['@steerline/contracts', '@steerline/client', 'zod']));
    const runtime = installed.filter((p) => /^(@nats-io\/|@nestjs\/|nestjs-pino$|pino|prom-client$|fastify)/.test(p));
    expect(runtime).toEqual([]);
    expect(installed.filter((p) => !['typescript', '@types/node', 'undici-types'].includes(p)).sort()).toEqual(['@steerline/client', '@steerline/contracts', 'zod']);
  });

  it('type-checks against the packages’ declarations, runs, and the steer it sends is delivered', async () => {
    const compiled = await app.run('npx', ['tsc', '-p', '.'], { timeoutMs: 120_000 });
    expect(compiled).toMatchObject({ code: 0, stderr: '' });

    const ran = await app.run('node', ['out/main.js'], { env: { STEERLINE_URL: stack.url }, timeoutMs: 60_000 });
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    const out = JSON.parse(ran.stdout.trim().split('\n').at(-1)!);
    expect(out.queued).toMatchObject({ status: 'queued', text: 'go left', position: 1 });
    expect(out.receipt).toMatchObject({ status: 'delivered', steerId: out.queued.steerId, text: 'go left', boundary: 'tool_results', step: 1 });
    expect(out.refusedWith).toBe('invalid_request');

    const events = await stack.turnEnded(out.turnId);
    const delivered = events.filter((e) => e.event.type === 'SteeringDelivered').map((e) => e.event.data);
    expect(delivered).toEqual([expect.objectContaining({ steerId: out.queued.steerId, text: 'go left' })]);
  }, 180_000);
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../support/env';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { freshProject, packLibs, type FreshProject } from '../support/pack';
import { approvalRequested, startStack, type Stack } from '../support/stack';

/**
 * The adapters as another project gets them: `npm pack` of the client, the
 * contracts and both adapters, installed with the frameworks from the registry
 * into a new project outside the repository. Its agents are the repository's
 * examples, unchanged, compiled with the project's own TypeScript against the
 * installed declarations, and run with node against a real stack and the fake
 * OpenAI-compatible server. A steer sent while `book_trip` waits for approval
 * reaches the agent's next model request.
 */
const EXAMPLES = join(__dirname, '../../examples');
const TSCONFIG = {
  compilerOptions: { module: 'node20', target: 'ES2023', lib: ['ES2023'], strict: true, outDir: 'out', types: ['node'], skipLibCheck: true },
  include: ['*.ts', '*.mts'],
};

describe('@steerline/ai-sdk and @steerline/openai-agents, packed and installed by another project', () => {
  let stack: Stack;
  let fake: FakeOpenAI;
  let app: FreshProject;

  beforeAll(async () => {
    const tarballs = await packLibs(['contracts', 'client', 'ai-sdk', 'openai-agents']);
    app = await freshProject({
      tarballs,
      // The frameworks at the versions the repository tests against; the project's own toolchain.
      packages: ['ai@7.0.173', '@ai-sdk/openai-compatible@3.0.92', '@openai/agents@0.20.0', 'zod@4.6.7', 'typescript@6.0.3', '@types/node@20.19.43'],
      files: {
        'ai-sdk-agent.ts': readFileSync(join(EXAMPLES, 'ai-sdk-agent/main.ts'), 'utf8'),
        'openai-agents.ts': readFileSync(join(EXAMPLES, 'openai-agents/main.ts'), 'utf8'),
        // The same agent as an ES module: it imports the adapter's ESM entry, one copy of @openai/agents with the app.
        'openai-agents-esm.mts': readFileSync(join(EXAMPLES, 'openai-agents/main.ts'), 'utf8'),
        'tsconfig.json': JSON.stringify(TSCONFIG, null, 2),
      },
    });
    stack = await startStack();
    fake = await startFakeOpenAI();
  }, 400_000);
  afterAll(async () => {
    await fake?.close();
    await stack?.close();
    app?.remove();
  });

  it('installs the adapters with the frameworks as peers, and the examples type-check against the installed declarations', async () => {
    const installed = app.installed();
    expect(installed).toEqual(expect.arrayContaining(['@steerline/ai-sdk', '@steerline/openai-agents', '@steerline/client', '@steerline/contracts', 'ai', '@openai/agents']));
    // The adapters bring no framework of their own: one copy of each, the project's.
    expect(installed.filter((p) => p === 'ai')).toEqual(['ai']);
    expect(installed.filter((p) => p === '@openai/agents')).toEqual(['@openai/agents']);
    for (const lib of ['ai-sdk', 'openai-agents']) {
      const manifest = JSON.parse(readFileSync(join(app.dir, 'node_modules/@steerline', lib, 'package.json'), 'utf8'));
      expect(Object.keys(manifest.peerDependencies)).toEqual([lib === 'ai-sdk' ? 'ai' : '@openai/agents']);
      expect(Object.keys(manifest.dependencies)).toEqual(['@steerline/client']);
    }
    const compiled = await app.run('npx', ['tsc', '-p', '.'], { timeoutMs: 180_000 });
    expect(compiled.stdout + compiled.stderr).toBe('');
    expect(compiled.code).toBe(0);
  }, 200_000);

  it.each([
    ['the AI SDK example (generateText)', 'out/ai-sdk-agent.js', {}],
    ['the AI SDK example (streamText)', 'out/ai-sdk-agent.js', { STREAM: '1' }],
    ['the Agents SDK example (chat-completions model)', 'out/openai-agents.js', {}],
    ['the Agents SDK example as an ES module', 'out/openai-agents-esm.mjs', {}],
  ])('%s runs there, and a steer sent while its booking waits for approval reaches its next model request', async (_name, main, extra) => {
    const conversationId = (await stack.api('POST', '/conversations')).body.id as string;
    const from = fake.requests.length;
    fake.answer({ toolCalls: [{ id: 'c1', name: 'book_trip', args: { city: 'Lisbon', date: 'Saturday' } }] }, { text: 'Booked TRIP-LIS-1.' });
    const ran = app.run('node', [main, 'Book me a trip to Lisbon'], {
      env: { STEERLINE_URL: stack.url, OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'test', MODEL: 'fake-model', CONVERSATION_ID: conversationId, ...extra },
      timeoutMs: 60_000,
    });
    const turnId: string = await eventually(
      async () => (await stack.nats.readAll()).find((e) => e.event.type === 'TurnStarted' && e.event.conversationId === conversationId)?.event.turnId ?? undefined,
      30_000,
      'the example to start its turn',
    );
    await approvalRequested(stack, turnId, 'c1', 30_000);
    const steer = stack.api('POST', `/turns/${turnId}/steers`, { text: 'make it Porto' }, { Prefer: 'wait=30' });
    await stack.turnHas(turnId, 'SteerQueued', { where: (d) => d.text === 'make it Porto' });
    expect((await stack.api('POST', `/turns/${turnId}/approvals/c1`, { decision: 'approve' })).status).toBe(200);
    const out = await ran;
    expect(out.code).toBe(0);
    const lines = out.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    expect(lines.at(-1)).toMatchObject({ event: 'completed', turnId, text: 'Booked TRIP-LIS-1.' });
    expect((await steer).body).toMatchObject({ status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2, text: 'make it Porto' });
    const second = fake.requests.slice(from)[1].body.messages as { role: string; content: unknown }[];
    expect(second.at(-1)).toEqual({ role: 'user', content: 'make it Porto' });
    expect(second.at(-2)).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
    const events = await stack.turnEnded(turnId);
    expect(events.at(-1)!.event).toMatchObject({ type: 'TurnCompleted', data: { text: 'Booked TRIP-LIS-1.' } });
  }, 90_000);
});

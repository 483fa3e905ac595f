import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { Agent, OpenAIChatCompletionsModel, OpenAIProvider, tool as agentTool, type Model } from '@openai/agents';
import { generateText, stepCountIs, streamText, tool as aiTool } from 'ai';
import { z } from 'zod';
import { Steerline as AiSdkSteerline } from '@steerline/ai-sdk';
import { Steerline as AgentsSteerline } from '@steerline/openai-agents';
import type { ExternalTurnInput } from '@steerline/client';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai';
import { startStack, type Stack } from './stack';

/**
 * Holds a tool call until the test lets it go: `entered(gate)` resolves once a
 * call of `hold` with that gate runs, `release(gate)` ends it. A turn held so
 * stays in its step however slow the machine is (no sleep decides anything).
 */
export class Gates {
  private readonly gates = new Map<string, { entered: () => void; release: () => void; hasEntered: Promise<void>; released: Promise<void> }>();

  entered(gate: string): Promise<void> {
    return this.get(gate).hasEntered;
  }

  release(gate: string): void {
    this.get(gate).release();
  }

  /** What the `hold` tool runs. */
  async pass(gate: string): Promise<string> {
    const g = this.get(gate);
    g.entered();
    await g.released;
    return `passed ${gate}`;
  }

  private get(gate: string) {
    let g = this.gates.get(gate);
    if (!g) {
      let entered!: () => void;
      let release!: () => void;
      const hasEntered = new Promise<void>((r) => (entered = r));
      const released = new Promise<void>((r) => (release = r));
      g = { entered, release, hasEntered, released };
      this.gates.set(gate, g);
    }
    return g;
  }
}

/** A turn started through an adapter, its agent running in this process against the fake model. */
export interface DrivenTurn {
  turnId: string;
  /** The adapter's turn.signal. */
  signal: AbortSignal;
  /** The agent's loop: resolves with the final text, rejects as `turn.run` does. */
  done: Promise<string>;
}

export interface Driver {
  name: string;
  start(conversationId: string, input: Omit<ExternalTurnInput, 'prompt'> & { prompt?: string }): Promise<DrivenTurn>;
}

/** The tools every driver's agent has: `hold` (waits at a gate), `echo`, `guarded` (runs once a person approved it) and `wait` (until its call is aborted). */
const HOLD = 'Waits at the gate named.';
const WAIT = 'Waits a minute, or until it is stopped.';
/** What the `wait` tool runs: a call that only an abort (an urgent steer's stop, a cancel) ends early. */
const waitUntilAborted = (signal: AbortSignal | undefined) =>
  new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => resolve('waited a minute'), 60_000);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
const ECHO = 'Returns its text.';
const GUARDED = 'Does something a person approves first.';
const guarded = async (approval: Promise<{ decision: string }>) => ((await approval).decision === 'approved' ? 'guarded ran' : 'guarded was denied');

/** The three ways the adapters drive a turn: the AI SDK's generateText and streamText, and the Agents SDK. */
export function drivers(steerlineUrl: () => string, modelUrl: () => string, gates: Gates): Driver[] {
  const aiSdk = (mode: 'generateText' | 'streamText'): Driver => ({
    name: `@steerline/ai-sdk with ${mode}`,
    async start(conversationId, input) {
      const steerline = new AiSdkSteerline({ baseUrl: steerlineUrl() });
      const model = createOpenAICompatible({ name: 'fake', baseURL: modelUrl(), apiKey: 'test', includeUsage: true })('fake-model');
      const turn = await steerline.startTurn({ conversationId, prompt: 'go', ...input });
      const tools = {
        hold: aiTool({ description: HOLD, inputSchema: z.object({ gate: z.string() }), execute: ({ gate }) => gates.pass(gate) }),
        echo: aiTool({ description: ECHO, inputSchema: z.object({ text: z.string() }), execute: ({ text }) => text }),
        wait: aiTool({ description: WAIT, inputSchema: z.object({}), execute: (_args, { abortSignal }) => waitUntilAborted(abortSignal) }),
        guarded: aiTool({ description: GUARDED, inputSchema: z.object({}), execute: (_args, { toolCallId }) => guarded(turn.approval({ toolCallId })) }),
      };
      const done = turn.run(async (hooks) =>
        mode === 'generateText'
          ? (await generateText({ model, tools, stopWhen: stepCountIs(20), ...hooks })).text
          : // Returned as is: `run` reads it to its end.
            streamText({ model, tools, stopWhen: stepCountIs(20), ...hooks }),
      );
      return { turnId: turn.id, signal: turn.signal, done: done.then((r) => (typeof r === 'string' ? r : r.text)) };
    },
  });
  const agents: Driver = {
    name: '@steerline/openai-agents with OpenAIChatCompletionsModel',
    async start(conversationId, input) {
      const steerline = new AgentsSteerline({ baseUrl: steerlineUrl() });
      const model: Model = await new OpenAIProvider({ baseURL: modelUrl(), apiKey: 'test', useResponses: false }).getModel('fake-model');
      if (!(model instanceof OpenAIChatCompletionsModel)) throw new Error('expected the SDK’s chat-completions model');
      const turn = await steerline.startTurn({ conversationId, prompt: 'go', ...input });
      const agent = new Agent({
        name: 'test agent',
        instructions: 'Use the tools.',
        model,
        tools: [
          agentTool({ name: 'hold', description: HOLD, parameters: z.object({ gate: z.string() }), execute: ({ gate }) => gates.pass(gate) }),
          agentTool({ name: 'echo', description: ECHO, parameters: z.object({ text: z.string() }), execute: ({ text }) => text }),
          agentTool({ name: 'wait', description: WAIT, parameters: z.object({}), execute: (_args, _ctx, details) => waitUntilAborted(details?.signal) }),
          agentTool({ name: 'guarded', description: GUARDED, parameters: z.object({}), execute: (_args, _ctx, details) => guarded(turn.approval({ callId: details!.toolCall!.callId })) }),
        ],
      });
      const done = turn.run(agent, input.prompt ?? 'go', { maxTurns: 20, runConfig: { tracingDisabled: true } });
      return { turnId: turn.id, signal: turn.signal, done: done.then((r) => String(r.finalOutput)) };
    },
  };
  return [aiSdk('generateText'), aiSdk('streamText'), agents];
}

export interface AdapterEnv {
  stack: Stack;
  fake: FakeOpenAI;
}

/**
 * A spec file's stack and fake model (started before its tests, closed after),
 * the gates its agents' `hold` tool waits at, and the drivers to run each test with.
 */
export function adapterEnv(): { env: AdapterEnv; gates: Gates; drivers: Driver[] } {
  const env = {} as AdapterEnv;
  beforeAll(async () => {
    env.stack = await startStack();
    env.fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await env.fake?.close();
    await env.stack?.close();
  });
  const gates = new Gates();
  return { env, gates, drivers: drivers(() => env.stack.url, () => env.fake.baseUrl, gates) };
}

/** Turns of one driver: each started after queueing the fake model's answers; `requests()` are the ones it made. */
export class DriverTurns {
  turn!: DrivenTurn;
  private from = 0;

  constructor(
    private readonly env: AdapterEnv,
    private readonly driver: Driver,
  ) {}

  async start(answers: Parameters<FakeOpenAI['answer']>, input: Parameters<Driver['start']>[1] = {}): Promise<{ cid: string; tid: string }> {
    const cid = (await this.env.stack.api('POST', '/conversations')).body.id as string;
    this.from = this.env.fake.requests.length;
    this.env.fake.answer(...answers);
    this.turn = await this.driver.start(cid, input);
    return { cid, tid: this.turn.turnId };
  }

  requests() {
    return this.env.fake.requests.slice(this.from);
  }
}

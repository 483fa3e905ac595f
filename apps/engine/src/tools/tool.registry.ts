import { toolAllowed, type ToolListing } from '@steerline/contracts';
import type { ToolSpec } from '../models/model.provider';
import { SleepClock } from './sleep.clock';

/** Which call of which turn a tool runs for; remote tools pass it on to their service. */
export interface ToolCallContext {
  tenantId: string;
  conversationId: string;
  turnId: string;
  step: number;
  toolCallId: string;
  /** Reports how the call is going (live output, docs/design.md §11; an MCP server's progress notifications); cheap, never awaited. */
  progress?: (update: ToolProgressUpdate) => void;
  /** The engine's bound on the output; a remote service cuts to it so the marker names the true size. */
  maxOutputBytes?: number;
}

/** How far a running call got: `progress` from 0 to 1 when the tool knows its total. */
export interface ToolProgressUpdate {
  progress?: number;
  message?: string;
}

export interface Tool {
  spec: ToolSpec;
  /** Safe to run again with the same arguments: a call cut off by a lost engine runs again on the engine that resumes the turn (built-in sleep and echo, a remote tool that says `idempotent: true`, an MCP tool's `idempotentHint`). */
  idempotent?: boolean;
  /** Where it comes from, for `GET /v1/tools`: `service` (remote), `mcp:<server>`; absent: `builtin`. */
  source?: string;
  /**
   * `false`: an urgent steer waits for a running call instead of cutting it (docs/design.md §2, "Urgency"):
   * a remote tool's `interruptible: false`, an MCP tool's `destructiveHint: true` or `interruptible: false`. Absent: interruptible.
   */
  interruptible?: boolean;
  run(args: Record<string, unknown>, signal: AbortSignal, call?: ToolCallContext): Promise<unknown>;
}

/** Tools that come and go while the engine runs (remote tools over NATS, MCP servers' tools). */
export interface ToolSource {
  /** `tenantId`: the turn's tenant, for sources that offer some tools to some tenants only. */
  list(tenantId?: string): Tool[];
  get(name: string, tenantId?: string): Tool | undefined;
}

/**
 * A tool that failed; its message becomes the tool result's error, which the
 * model sees. A `fatal` one fails the turn (docs/design.md §2.17: `turn_failed`).
 */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly fatal = false,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

const MAX_SLEEP_MS = 10 * 60 * 1000;
/** Every running `sleep` of this process reports its progress on one clock. */
const sleepClock = new SleepClock(400);

export const BUILTIN_TOOLS: Tool[] = [
  {
    spec: {
      name: 'sleep',
      description: 'Waits the given number of milliseconds.',
      parameters: { type: 'object', properties: { ms: { type: 'integer', minimum: 0, maximum: MAX_SLEEP_MS } }, required: ['ms'] },
    },
    idempotent: true,
    async run(args, signal, call) {
      const ms = Number(args.ms);
      if (!Number.isInteger(ms) || ms < 0 || ms > MAX_SLEEP_MS) throw new ToolError('invalid_arguments', `ms must be an integer from 0 to ${MAX_SLEEP_MS}`);
      // Progress at its start and at least every 400 ms (docs/design.md §11).
      await sleepClock.sleep(ms, signal, call?.progress);
      return `slept ${ms} ms`;
    },
  },
  {
    spec: {
      name: 'echo',
      description: 'Returns its text.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
    idempotent: true,
    async run(args) {
      if (typeof args.text !== 'string') throw new ToolError('invalid_arguments', 'text must be a string');
      return args.text;
    },
  },
  {
    spec: {
      name: 'fail',
      description: 'Always fails with the given message, and with it the turn.',
      parameters: { type: 'object', properties: { message: { type: 'string' } } },
    },
    async run(args) {
      throw new ToolError('tool_failed', typeof args.message === 'string' ? args.message : 'failed on purpose', true);
    },
  },
];

/**
 * The tools offered to models: the built-ins (`STEERLINE_BUILTIN_TOOLS` may name
 * fewer) and whatever the sources (remote tools, MCP servers) know now. A
 * built-in shadows a source's tool of the same name, so a service cannot take
 * over `sleep` or `fail`; between sources, the first one listed wins.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  private readonly sources: ToolSource[];

  constructor(tools: Tool[] = BUILTIN_TOOLS, sources: ToolSource | ToolSource[] = []) {
    for (const tool of tools) this.tools.set(tool.spec.name, tool);
    this.sources = Array.isArray(sources) ? sources : [sources];
  }

  /** What a turn of `tenantId` is offered now: every tool, or those its allow-list (`allow`) lets it call. */
  specs(tenantId?: string, allow?: readonly string[]): ToolSpec[] {
    return this.offered(tenantId)
      .filter((t) => toolAllowed(allow, t.spec.name))
      .map((t) => t.spec);
  }

  /** The tenant's tools as `GET /v1/tools` lists them. No tool asks for approval unless a turn's `approvals` names it. */
  listings(tenantId: string): ToolListing[] {
    return this.offered(tenantId).map((t) => ({ ...t.spec, source: t.source ?? 'builtin', approval: false }));
  }

  private offered(tenantId?: string): Tool[] {
    const offered = new Map(this.tools);
    for (const source of this.sources) {
      for (const tool of source.list(tenantId)) if (!offered.has(tool.spec.name)) offered.set(tool.spec.name, tool);
    }
    return [...offered.values()];
  }

  /** The tool a call names; undefined for an unknown one or one outside the turn's allow-list (`allow`). */
  get(name: string, tenantId?: string, allow?: readonly string[]): Tool | undefined {
    if (!toolAllowed(allow, name)) return undefined;
    const builtin = this.tools.get(name);
    if (builtin) return builtin;
    for (const source of this.sources) {
      const tool = source.get(name, tenantId);
      if (tool) return tool;
    }
    return undefined;
  }

  /** The names of the tools offered now (to a turn of `tenantId`) that may run twice. */
  idempotentNames(tenantId?: string): string[] {
    return [...this.tools.values(), ...this.sources.flatMap((source) => source.list(tenantId))].filter((t) => t.idempotent).map((t) => t.spec.name);
  }
}

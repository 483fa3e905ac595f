import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { ENVELOPE_ROOM_BYTES, MAX_OUTPUT_BYTES_DEFAULT, RUNNER_LEASE_MS, subjects } from '@steerline/contracts';
import { connectNats, ensureStream, maxPayload, poolCommands } from '@steerline/runtime';
import { LivePublisher } from './live/live.publisher';
import { onError, serveEngineCommands, subscribeQueuedTurn } from './commands/engine.commands';
import { startModel } from './commands/start-model';
import { turnSubjects } from './commands/turn.subjects';
import { serveDiscovery } from './commands/discovery.commands';
import type { EngineConfig } from './config';
import { EventLog } from './log/event-log';
import { configuredModels, type ModelRegistry } from './models/model.registry';
import { BUILTIN_TOOLS, ToolRegistry } from './tools/tool.registry';
import { DEFAULT_REMOTE_TOOL_OPTIONS, RemoteToolDirectory } from './tools/remote/remote-tool.directory';
import { McpToolSource } from './tools/mcp/mcp-tool.source';
import { TurnRegistry } from './turn/turn.registry';
import { EngineMetrics } from './observability/engine-metrics';
import { OrphanReaper } from './ownership/orphan-reaper';
import { TurnOwnership } from './ownership/turn-ownership';

export const ENGINE_CONFIG = Symbol('ENGINE_CONFIG');

/** Owns the engine's connection, its running turns and its subscriptions. */
@Injectable()
export class EngineService implements OnApplicationShutdown {
  private readonly logger = new Logger('Engine');
  private nc?: NatsConnection;
  private subscriptions: Subscription[] = [];
  turns?: TurnRegistry;
  /** The conversation log's appends (the bench counts a boundary's publishes and acks on it). */
  log?: EventLog;
  reaper?: OrphanReaper;
  private ownership?: TurnOwnership;
  /** The model providers; a test may wrap one to record what the model was sent. */
  readonly models: ModelRegistry;
  /** Tools other services serve over NATS. */
  remoteTools?: RemoteToolDirectory;
  /** Tools of the MCP servers in STEERLINE_MCP_CONFIG. */
  mcpTools?: McpToolSource;
  /** Counted from the events this engine appends; main.ts serves them on METRICS_PORT. */
  readonly metrics = new EngineMetrics();

  constructor(@Inject(ENGINE_CONFIG) private readonly config: EngineConfig) {
    this.models = configuredModels(config);
  }

  async start(): Promise<void> {
    const s = subjects(this.config.prefix, { subjectPartitions: this.config.subjectPartitions });
    const nc = (this.nc = await connectNats(this.config.natsUrl, `steerline-engine-${this.config.engineId}`));
    // A command line per event, written without an ArrayBuffer of its own (issue 34).
    poolCommands(nc);
    const jsm = await jetstreamManager(nc);
    await ensureStream(jsm, s, this.config.streamReplicas);
    const log = (this.log = new EventLog(nc, undefined, (event) => this.metrics.record(event)));
    this.metrics.gauge('steerline_turns_live', 'Turns running on this engine', () => this.turns?.size ?? 0);
    const ownership = (this.ownership = await TurnOwnership.open(nc, s, this.config.engineId, this.config.leaseMs, this.config.streamReplicas));
    this.remoteTools = new RemoteToolDirectory(nc, s.prefix, this.config.remoteTools ?? DEFAULT_REMOTE_TOOL_OPTIONS);
    await this.remoteTools.start();
    const mcp = this.config.mcp;
    if (mcp) {
      this.mcpTools = new McpToolSource(mcp.servers, { ...mcp, callTimeoutMs: mcp.callTimeoutMs ?? this.config.remoteTools?.callTimeoutMs ?? DEFAULT_REMOTE_TOOL_OPTIONS.callTimeoutMs });
      await this.mcpTools.start();
    }
    const builtins = this.config.builtinTools ? BUILTIN_TOOLS.filter((t) => this.config.builtinTools!.includes(t.spec.name)) : BUILTIN_TOOLS;
    const tools = new ToolRegistry(builtins, this.mcpTools ? [this.remoteTools, this.mcpTools] : [this.remoteTools]);
    let subscribeTurn: ReturnType<typeof turnSubjects> | undefined;
    this.turns = new TurnRegistry({
      jsm,
      subjects: s,
      log,
      models: this.models,
      tools,
      engineId: this.config.engineId,
      ownership,
      resumeLimit: this.config.resumeLimit,
      runnerLeaseMs: this.config.runnerLeaseMs ?? RUNNER_LEASE_MS.default,
      subscribeTurn: (runner) => subscribeTurn!(runner),
      subscribeQueued: (turn, cancel) => subscribeQueuedTurn(nc, s, turn, cancel),
      // Read per use: a server's max_payload is what it announced on this connection, never assumed.
      maxOutputBytes: () => Math.min(this.config.maxOutputBytes ?? MAX_OUTPUT_BYTES_DEFAULT, maxPayload(nc) - ENVELOPE_ROOM_BYTES),
      live: new LivePublisher(nc, s),
    });
    const withModel = startModel({ models: this.models, defaultModel: this.config.defaultModel });
    subscribeTurn = turnSubjects(nc, s, this.turns, onError, withModel);
    this.subscriptions = [...serveEngineCommands(nc, s, log, this.turns, withModel, this.config.streamReplicas, this.config.defaultAgent), ...serveDiscovery(nc, s, tools, this.models)];
    const turns = this.turns;
    this.reaper = new OrphanReaper({ ownership, turns, runsHere: (turnId) => turns.holds(turnId) });
    this.reaper.start(Math.max(200, Math.floor(this.config.leaseMs / 2)));
    await nc.flush();
    this.logger.log({ message: 'engine ready', engineId: this.config.engineId, prefix: s.prefix });
  }

  /**
   * Stop taking work, hand the running turns over, then close the connection.
   * The turns keep their claims; giving up the lease at once lets another
   * engine (or this one, restarted) resume them without waiting for it to run out.
   */
  async onApplicationShutdown(): Promise<void> {
    for (const sub of this.subscriptions) sub.unsubscribe();
    await this.reaper?.stop();
    this.remoteTools?.stop();
    await this.turns?.handOverAll();
    await this.mcpTools?.stop();
    await this.ownership?.close(true);
    await this.nc?.drain().catch(() => undefined);
  }
}

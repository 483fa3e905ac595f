import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connectNats, ensureStream, subjects } from '@steerline/contracts';
import { serveEngineCommands, subscribeTurn } from './commands/engine.commands';
import type { EngineConfig } from './config';
import { EventLog } from './log/event-log';
import { ModelRegistry } from './models/model.registry';
import { BUILTIN_TOOLS, ToolRegistry } from './tools/tool.registry';
import { TurnRegistry } from './turn/turn.registry';

export const ENGINE_CONFIG = Symbol('ENGINE_CONFIG');

/** Owns the engine's connection, its running turns and its subscriptions. */
@Injectable()
export class EngineService implements OnApplicationShutdown {
  private readonly logger = new Logger('Engine');
  private nc?: NatsConnection;
  private subscriptions: Subscription[] = [];
  turns?: TurnRegistry;
  /** The model providers; a test may wrap one to record what the model was sent. */
  readonly models = new ModelRegistry();

  constructor(@Inject(ENGINE_CONFIG) private readonly config: EngineConfig) {}

  async start(): Promise<void> {
    const s = subjects(this.config.prefix);
    const nc = (this.nc = await connectNats(this.config.natsUrl, `steerline-engine-${this.config.engineId}`));
    const jsm = await jetstreamManager(nc);
    await ensureStream(jsm, s, this.config.streamReplicas);
    const js = jetstream(nc);
    const log = new EventLog(js);
    const tools = new ToolRegistry(this.config.builtinTools ? BUILTIN_TOOLS.filter((t) => this.config.builtinTools!.includes(t.spec.name)) : BUILTIN_TOOLS);
    this.turns = new TurnRegistry({
      nc,
      js,
      jsm,
      subjects: s,
      log,
      models: this.models,
      tools,
      engineId: this.config.engineId,
      subscribeTurn: (runner) => subscribeTurn(nc, s, runner),
    });
    this.subscriptions = serveEngineCommands(nc, s, log, this.turns);
    await nc.flush();
    this.logger.log({ message: 'engine ready', engineId: this.config.engineId, prefix: s.prefix });
  }

  /** Stop taking work, settle what runs, then close the connection (STYLE §6). */
  async onApplicationShutdown(): Promise<void> {
    for (const sub of this.subscriptions) sub.unsubscribe();
    await this.turns?.abandonAll('engine_shutdown');
    await this.nc?.drain().catch(() => undefined);
  }
}

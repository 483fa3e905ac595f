import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { AgentStore } from '@steerline/runtime';
import { resolveStartCommand, type Agent, type NextAgentVersionBody, type StartTurnCommand, type Subjects } from '@steerline/contracts';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { NATS_CONNECTION, SUBJECTS } from '../nats/nats.tokens';

/**
 * The tenant's agents, in the agent store (libs/contracts/src/agent-store.ts).
 * The bucket is opened on first use, not at start-up: a gateway that never
 * touches an agent makes no bucket, and a failed open is tried again on the next call.
 */
@Injectable()
export class AgentsService {
  private store?: Promise<AgentStore>;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  async create(tenantId: string, name: string, definition: NextAgentVersionBody): Promise<Agent> {
    return (await this.agents()).create(tenantId, name, definition);
  }

  async next(tenantId: string, name: string, definition: NextAgentVersionBody): Promise<Agent> {
    return (await this.agents()).next(tenantId, name, definition);
  }

  async read(tenantId: string, name: string, version?: number): Promise<Agent | undefined> {
    return (await this.agents()).read(tenantId, name, version);
  }

  async list(tenantId: string): Promise<Agent[]> {
    return (await this.agents()).list(tenantId);
  }

  /** The start command with its agent resolved and pinned (`resolveStartCommand`); unknown agent or version: `not_found`. */
  resolve(command: StartTurnCommand): Promise<StartTurnCommand> {
    return resolveStartCommand(command, (tenantId, name, version) => this.read(tenantId, name, version));
  }

  private agents(): Promise<AgentStore> {
    this.store ??= AgentStore.open(this.nc, this.s, this.config.streamReplicas).catch((err: unknown) => {
      this.store = undefined;
      throw err;
    });
    return this.store;
  }
}

import type { NatsConnection } from '@nats-io/transport-node';
import { AgentStore } from '@steerline/runtime';
import { resolveStartCommand, type StartTurnCommand, type Subjects } from '@steerline/contracts';

/**
 * Resolves the agent of a start sent straight over NATS (docs/design.md §6.1),
 * as the gateway resolves one sent over HTTP: the same store, the same pure
 * step, so the turn runs, and TurnStarted records, a pinned `name@version` with
 * the agent's fields under the turn's own. A start the gateway already resolved
 * names a version and resolves to the same fields. The bucket is opened on the
 * first start that names an agent; a failed open is tried again on the next.
 */
export class AgentResolution {
  private store?: Promise<AgentStore>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly s: Subjects,
    private readonly replicas: number,
  ) {}

  /** The command resolved; an unknown agent or version is `not_found`, before anything is appended. */
  resolve(command: StartTurnCommand): Promise<StartTurnCommand> {
    if (command.agent === undefined) return Promise.resolve(command);
    return resolveStartCommand(command, async (tenantId, name, version) => (await this.agents()).read(tenantId, name, version));
  }

  private agents(): Promise<AgentStore> {
    this.store ??= AgentStore.open(this.nc, this.s, this.replicas).catch((err: unknown) => {
      this.store = undefined;
      throw err;
    });
    return this.store;
  }
}

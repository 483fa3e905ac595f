import type { NatsConnection } from '@nats-io/transport-node';
import { AgentStore } from '@steerline/runtime';
import { resolveStartCommand, SteerlineError, type StartTurnCommand, type Subjects } from '@steerline/contracts';
import { takesDefault } from './start-model';

/**
 * Resolves the agent of a start sent straight over NATS (docs/design.md §6.1),
 * as the gateway resolves one sent over HTTP: the same store, the same pure
 * step, so the turn runs, and TurnStarted records, a pinned `name@version` with
 * the agent's fields under the turn's own. A start the gateway already resolved
 * names a version and resolves to the same fields. The bucket is opened on the
 * first start that names an agent; a failed open is tried again on the next.
 *
 * With STEERLINE_DEFAULT_MODEL an agent (`defaultAgent`), a start that names
 * neither model nor agent runs that agent of its tenant, resolved here like
 * any other: the gateway passes such a start on as it is, since the default is
 * the engine's setting, not the gateway's.
 */
export class AgentResolution {
  private store?: Promise<AgentStore>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly s: Subjects,
    private readonly replicas: number,
    private readonly defaultAgent?: string,
  ) {}

  /**
   * The command resolved; an unknown agent or version is `not_found`, before
   * anything is appended. An unknown default agent is the server's setting
   * gone wrong, not the client's reference: `invalid_request` naming it.
   */
  async resolve(command: StartTurnCommand): Promise<StartTurnCommand> {
    if (this.defaultAgent !== undefined && takesDefault(command)) {
      try {
        return await this.resolveAgent({ ...command, agent: this.defaultAgent });
      } catch (err) {
        if (!(err instanceof SteerlineError && err.code === 'not_found')) throw err;
        throw new SteerlineError('invalid_request', `the turn names no model or agent, and STEERLINE_DEFAULT_MODEL names agent ${this.defaultAgent}, which this tenant does not have (${err.message}): give the turn a model or an agent, or create the agent`);
      }
    }
    if (command.agent === undefined) return command;
    return this.resolveAgent(command);
  }

  private resolveAgent(command: StartTurnCommand): Promise<StartTurnCommand> {
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

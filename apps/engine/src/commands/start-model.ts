import { EXTERNAL_MODEL, SteerlineError, type ModelSpec, type StartTurnCommand } from '@steerline/contracts';
import type { ModelRegistry } from '../models/model.registry';

/** A start as the registry takes it: with the model the turn runs with, which TurnStarted (or TurnQueued) records. */
export type StartTurnWithModel = StartTurnCommand & { model: ModelSpec };

/** A start command as it arrives, given the model it runs with; refusals are thrown. */
export type StartModel = (command: StartTurnCommand) => StartTurnWithModel;

/**
 * Decided where a start arrives, before anything is read or appended: the
 * turn's own model, else the server's STEERLINE_DEFAULT_MODEL. Refused
 * `invalid_request`, saying why, when there is neither or the model's provider
 * is off on this server (the scripted one with STEERLINE_SCRIPTED_MODEL=off).
 * An external turn (docs/runner-protocol.md) runs its runner's model. A
 * default agent was applied before, by AgentResolution, so a turn that runs
 * it already has the agent's model here.
 */
/**
 * Whether a start takes the server's default (STEERLINE_DEFAULT_MODEL, a model
 * or an agent): it names neither a model nor an agent, and its model is not an
 * external runner's.
 */
export const takesDefault = (command: StartTurnCommand): boolean => command.model === undefined && command.agent === undefined && command.runner !== 'external';

export function startModel(server: { models: ModelRegistry; defaultModel?: ModelSpec }): StartModel {
  return (command) => {
    // An external turn's runner calls its own model: recorded as given (or as `external`), never checked against this server's providers.
    if (command.runner === 'external') return { ...command, model: command.model ?? EXTERNAL_MODEL };
    const model = command.model ?? server.defaultModel;
    if (!model) throw new SteerlineError('invalid_request', 'the turn names no model and this server has no default: give the turn a model, or set STEERLINE_DEFAULT_MODEL');
    // The provider and its endpoint (a named one, STEERLINE_MODELS), as offered to the turn's tenant.
    server.models.check(model, command.tenantId);
    return { ...command, model };
  };
}

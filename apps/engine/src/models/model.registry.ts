import type { ModelSpec } from '@steerline/contracts';
import { ModelError, type ModelProvider } from './model.provider';
import { ScriptedModel } from './scripted.model';
import { AnthropicModel, type AnthropicConfig } from './anthropic/anthropic.model';
import { OpenAIModel, type OpenAIConfig } from './openai/openai.model';

/** What makes a provider available, said in the refusal of a turn that names a provider this server lacks. */
const HOW_TO_ENABLE: Record<ModelSpec['provider'], string> = {
  scripted: 'model provider scripted is turned off on this server (STEERLINE_SCRIPTED_MODEL=off)',
  openai: 'model provider openai is not configured on this server: set OPENAI_BASE_URL or OPENAI_API_KEY',
  anthropic: 'model provider anthropic is not configured on this server: set ANTHROPIC_BASE_URL or ANTHROPIC_API_KEY',
};

export const providerOff = (name: ModelSpec['provider']): string => HOW_TO_ENABLE[name] ?? `model provider ${name} is not configured on this server`;

/** Chooses the provider a turn names. New providers register here. */
export class ModelRegistry {
  // Keyed by name, not by the contract's provider list: a provider can be
  // configured before the contract lets a turn name it (see anthropic).
  private readonly providers = new Map<string, ModelProvider>();

  register(name: string, provider: ModelProvider): void {
    this.providers.set(name, provider);
  }

  has(name: ModelSpec['provider']): boolean {
    return this.providers.has(name);
  }

  /** Why a turn naming `name` is refused (`invalid_request`); undefined when the provider is offered. */
  refusal(name: ModelSpec['provider']): string | undefined {
    return this.has(name) ? undefined : providerOff(name);
  }

  /**
   * The provider, or one whose every call fails `model_failed` naming what the
   * turn's model lacks here: a turn resumed from an engine configured otherwise
   * fails at its next model call, as a turn does whose model call fails,
   * instead of its adoption throwing.
   */
  get(name: ModelSpec['provider']): ModelProvider {
    return this.providers.get(name) ?? { complete: (request) => Promise.reject(new ModelError('model_failed', this.refusal(request.model.provider) ?? this.refusal(name)!)) };
  }
}

/** What decides which providers a server offers (the engine's configuration). */
export interface ModelsConfig {
  /** false: STEERLINE_SCRIPTED_MODEL=off; absent: on. */
  scriptedModel?: boolean;
  openai?: OpenAIConfig;
  anthropic?: AnthropicConfig;
}

/**
 * The providers this server's configuration enables, each with how to make it:
 * `scripted` unless STEERLINE_SCRIPTED_MODEL=off, `openai` only when
 * OPENAI_BASE_URL or OPENAI_API_KEY is set, `anthropic` when ANTHROPIC_BASE_URL
 * or ANTHROPIC_API_KEY is — a turn that names another is refused
 * `invalid_request` at start, with the reason.
 */
function enabled({ scriptedModel, openai, anthropic }: ModelsConfig): Partial<Record<ModelSpec['provider'], () => ModelProvider>> {
  return {
    ...(scriptedModel !== false && { scripted: () => new ScriptedModel() }),
    ...(openai && { openai: () => new OpenAIModel(openai) }),
    ...(anthropic && { anthropic: () => new AnthropicModel(anthropic) }),
  };
}

/** The names of the providers `config` enables (read at start-up, to check STEERLINE_DEFAULT_MODEL). */
export const offeredProviders = (config: ModelsConfig) => Object.keys(enabled(config)) as ModelSpec['provider'][];

export function configuredModels(config: ModelsConfig): ModelRegistry {
  const models = new ModelRegistry();
  for (const [name, create] of Object.entries(enabled(config))) models.register(name, create());
  return models;
}

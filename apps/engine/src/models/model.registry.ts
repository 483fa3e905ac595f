import type { ModelSpec } from '@steerline/contracts';
import type { ModelProvider } from './model.provider';
import { ScriptedModel } from './scripted.model';
import { AnthropicModel, type AnthropicConfig } from './anthropic/anthropic.model';
import { OpenAIModel, type OpenAIConfig } from './openai/openai.model';

/** Chooses the provider a turn names. New providers register here. */
export class ModelRegistry {
  // Keyed by name, not by the contract's provider list: a provider can be
  // configured before the contract lets a turn name it (see anthropic).
  private readonly providers = new Map<string, ModelProvider>([['scripted', new ScriptedModel()]]);

  register(name: string, provider: ModelProvider): void {
    this.providers.set(name, provider);
  }

  has(name: ModelSpec['provider']): boolean {
    return this.providers.has(name);
  }

  get(name: ModelSpec['provider']): ModelProvider {
    const provider = this.providers.get(name);
    if (!provider) throw new Error(`no model provider ${name} is configured`);
    return provider;
  }
}

/**
 * The providers this server's configuration enables: `scripted` always, `openai`
 * only when OPENAI_BASE_URL or OPENAI_API_KEY is set, `anthropic` when
 * ANTHROPIC_BASE_URL or ANTHROPIC_API_KEY is — a turn that names an
 * unconfigured provider is refused `invalid_request` at start.
 */
export function configuredModels(config: { openai?: OpenAIConfig; anthropic?: AnthropicConfig }): ModelRegistry {
  const models = new ModelRegistry();
  if (config.openai) models.register('openai', new OpenAIModel(config.openai));
  if (config.anthropic) models.register('anthropic', new AnthropicModel(config.anthropic));
  return models;
}

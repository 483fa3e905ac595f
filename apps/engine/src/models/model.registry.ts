import type { ModelSpec } from '@steerline/contracts';
import type { ModelProvider } from './model.provider';
import { ScriptedModel } from './scripted.model';
import { OpenAIModel, type OpenAIConfig } from './openai/openai.model';

/** Chooses the provider a turn names. New providers register here. */
export class ModelRegistry {
  private readonly providers = new Map<ModelSpec['provider'], ModelProvider>([['scripted', new ScriptedModel()]]);

  register(name: ModelSpec['provider'], provider: ModelProvider): void {
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
 * only when OPENAI_BASE_URL or OPENAI_API_KEY is set — a turn that names an
 * unconfigured provider is refused `invalid_request` at start.
 */
export function configuredModels(config: { openai?: OpenAIConfig }): ModelRegistry {
  const models = new ModelRegistry();
  if (config.openai) models.register('openai', new OpenAIModel(config.openai));
  return models;
}

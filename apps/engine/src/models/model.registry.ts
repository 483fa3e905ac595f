import type { ModelSpec } from '@steerline/contracts';
import type { ModelProvider } from './model.provider';
import { ScriptedModel } from './scripted.model';

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

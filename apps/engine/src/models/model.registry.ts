import { DEFAULT_ENDPOINT, SteerlineError, type ModelEndpointListing, type ModelSpec, type ModelsAnswer } from '@steerline/contracts';
import { ModelError, type ModelProvider } from './model.provider';
import { ScriptedModel } from './scripted.model';
import { ANTHROPIC_DEFAULT_BASE_URL, AnthropicModel, type AnthropicConfig } from './anthropic/anthropic.model';
import { OPENAI_DEFAULT_BASE_URL, OpenAIModel, type OpenAIConfig } from './openai/openai.model';
import type { NamedEndpoint } from './model.endpoints';

type Provider = ModelSpec['provider'];

/** What makes a provider available, said in the refusal of a turn that names a provider this server lacks. */
const HOW_TO_ENABLE: Record<Provider, string> = {
  scripted: 'model provider scripted is turned off on this server (STEERLINE_SCRIPTED_MODEL=off)',
  openai: 'model provider openai is not configured on this server: set OPENAI_BASE_URL or OPENAI_API_KEY',
  anthropic: 'model provider anthropic is not configured on this server: set ANTHROPIC_BASE_URL or ANTHROPIC_API_KEY',
};

export const providerOff = (name: Provider): string => HOW_TO_ENABLE[name] ?? `model provider ${name} is not configured on this server`;

/** One configured endpoint: what serves it, and what may be said about it (never a key or a header). */
interface Endpoint {
  provider: ModelProvider;
  baseURL?: string;
  tenants?: readonly string[];
}

/** Chooses the provider and endpoint a turn names. New providers register here. */
export class ModelRegistry {
  // Keyed by provider name and endpoint (`openai/local`), not by the contract's provider list.
  private readonly endpoints = new Map<string, Endpoint & { name: string; kind: string }>();

  /** Registers (or, as tests do to record requests, replaces) the provider of one endpoint. */
  register(name: string, provider: ModelProvider, endpoint: string = DEFAULT_ENDPOINT, info: Omit<Endpoint, 'provider'> = this.endpoints.get(key(name, endpoint)) ?? {}): void {
    this.endpoints.set(key(name, endpoint), { ...info, provider, name: endpoint, kind: name });
  }

  has(name: Provider, endpoint: string = DEFAULT_ENDPOINT): boolean {
    return this.endpoints.has(key(name, endpoint));
  }

  /** Why a turn naming `name` (its default endpoint) is refused (`invalid_request`); undefined when the provider is offered. */
  refusal(name: Provider): string | undefined {
    return this.has(name) ? undefined : providerOff(name);
  }

  /**
   * The provider, or one whose every call fails `model_failed` naming what the
   * turn's model lacks here: a turn resumed from an engine configured otherwise
   * fails at its next model call, as a turn does whose model call fails,
   * instead of its adoption throwing.
   */
  get(name: Provider, endpoint: string = DEFAULT_ENDPOINT): ModelProvider {
    const found = this.endpoints.get(key(name, endpoint))?.provider;
    if (found) return found;
    const missing = `no ${name} endpoint named ${endpoint} is configured on this server`;
    return { complete: (request) => Promise.reject(new ModelError('model_failed', this.refusal(request.model.provider) ?? this.refusal(name) ?? missing)) };
  }

  /** What serves `spec`: its endpoint's provider, or one that fails `model_failed` saying what this engine lacks. */
  providerFor(spec: ModelSpec): ModelProvider {
    return this.get(spec.provider, endpointOf(spec));
  }

  /**
   * Refuses a model a turn of `tenantId` may not run: an unconfigured provider,
   * or an endpoint that is unknown or not offered to the tenant (the same
   * answer, so a tenant cannot learn another's endpoints).
   */
  check(spec: ModelSpec, tenantId: string): void {
    const endpoint = endpointOf(spec);
    const found = this.endpoints.get(key(spec.provider, endpoint));
    if (found && offered(found, tenantId)) return;
    if (endpoint === DEFAULT_ENDPOINT) throw new SteerlineError('invalid_request', `model.provider: ${providerOff(spec.provider)}`);
    throw new SteerlineError('invalid_request', `model.endpoint: no ${spec.provider} endpoint named ${endpoint} is configured`);
  }

  /** The providers and endpoints a tenant's turns may name (`GET /v1/models`): names, providers and base URLs only. */
  listing(tenantId: string): ModelsAnswer {
    const endpoints: ModelEndpointListing[] = [...this.endpoints.values()]
      .filter((e) => offered(e, tenantId))
      .map((e) => ({ name: e.name, provider: e.kind as Provider, ...(e.baseURL && { baseURL: e.baseURL }) }));
    return { providers: [...new Set(endpoints.map((e) => e.provider))], endpoints };
  }
}

function key(provider: string, endpoint: string): string {
  return `${provider}/${endpoint}`;
}

function endpointOf(spec: ModelSpec): string {
  return ('endpoint' in spec && spec.endpoint) || DEFAULT_ENDPOINT;
}

function offered(endpoint: Endpoint, tenantId: string): boolean {
  return !endpoint.tenants || endpoint.tenants.includes(tenantId);
}

/** A base URL as it may be shown: without credentials or a query (some gateways take a key there). */
function shown(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const u = new URL(url);
  u.username = '';
  u.password = '';
  u.search = '';
  return u.toString();
}

/** What decides which providers a server offers (the engine's configuration). */
export interface ModelsConfig {
  /** false: STEERLINE_SCRIPTED_MODEL=off; absent: on. */
  scriptedModel?: boolean;
  openai?: OpenAIConfig;
  anthropic?: AnthropicConfig;
  endpoints?: NamedEndpoint[];
}

/** The names of the providers `config` enables on their `default` endpoint (read at start-up, to check STEERLINE_DEFAULT_MODEL). */
export function offeredProviders({ scriptedModel, openai, anthropic }: ModelsConfig): Provider[] {
  return [...(scriptedModel !== false ? (['scripted'] as const) : []), ...(openai ? (['openai'] as const) : []), ...(anthropic ? (['anthropic'] as const) : [])];
}

/**
 * The providers this server's configuration enables: `scripted` unless
 * STEERLINE_SCRIPTED_MODEL=off; the `default` endpoints of `openai` (when
 * OPENAI_BASE_URL or OPENAI_API_KEY is set) and `anthropic` (ANTHROPIC_BASE_URL
 * or ANTHROPIC_API_KEY); and every endpoint of STEERLINE_MODELS. A turn that
 * names an unconfigured provider or endpoint is refused `invalid_request` at
 * start, with the reason.
 */
export function configuredModels(config: ModelsConfig): ModelRegistry {
  const models = new ModelRegistry();
  if (config.scriptedModel !== false) models.register('scripted', new ScriptedModel());
  if (config.openai) models.register('openai', new OpenAIModel(config.openai), DEFAULT_ENDPOINT, { baseURL: shown(config.openai.baseUrl ?? OPENAI_DEFAULT_BASE_URL) });
  if (config.anthropic) models.register('anthropic', new AnthropicModel(config.anthropic), DEFAULT_ENDPOINT, { baseURL: shown(config.anthropic.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL) });
  for (const e of config.endpoints ?? []) {
    const provider = e.provider === 'openai' ? new OpenAIModel(e.config) : new AnthropicModel({ ...e.config, maxTokens: e.config.maxTokens ?? ANTHROPIC_MAX_TOKENS_DEFAULT });
    models.register(e.provider, provider, e.name, { baseURL: shown(e.config.baseUrl), ...(e.tenants && { tenants: e.tenants }) });
  }
  return models;
}

/** `max_tokens` of an anthropic request whose turn sets no maxOutputTokens (the API requires one); ANTHROPIC_MAX_TOKENS for `default`. */
export const ANTHROPIC_MAX_TOKENS_DEFAULT = 4096;

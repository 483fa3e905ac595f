import { JetStreamApiCodes } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { AgentSchema, SteerlineError, agentNotFound, type Agent, type NextAgentVersionBody, type Subjects } from '@steerline/contracts';
import { decodeJson, encodeJson, jetStreamErrorCode } from './nats';

/** A PUT that lost the race for the next version reads again; this many times at most. */
const NEXT_VERSION_TRIES = 20;

/**
 * Agent versions in a NATS JetStream KV bucket (`subjects().agentsBucket`),
 * one create-only key per version: `<tenant>.<name>.<version>`.
 *
 * Why KV and not PostgreSQL: the engine must resolve an agent for a NATS start
 * command, and the engine only talks to NATS; the bucket is durable (file
 * storage, replicated as the event stream is, STEERLINE_STREAM_REPLICAS), its
 * `create` refuses a key that exists, so two concurrent PUTs can never both
 * write version N (the loser reads again and writes N+1), and no version is
 * ever overwritten. The tenant is the key's first token: every read names it,
 * so one tenant's agents are never listed or read for another.
 */
export class AgentStore {
  private constructor(private readonly kv: KV) {}

  /** Opens the bucket, making it when it is missing (history 1: a key is written once). */
  static async open(nc: NatsConnection, s: Subjects, replicas = 1): Promise<AgentStore> {
    try {
      return new AgentStore(await new Kvm(nc).create(s.agentsBucket, { history: 1, replicas }));
    } catch (err) {
      throw new SteerlineError('unavailable', `the agent store does not answer: ${(err as Error).message}`);
    }
  }

  /** Version 1 of a new agent; `already_exists` when the tenant has an agent of that name. */
  async create(tenantId: string, name: string, definition: NextAgentVersionBody): Promise<Agent> {
    const agent = stored(name, 1, definition);
    if (!(await this.write(tenantId, agent))) throw new SteerlineError('already_exists', `agent ${name} already exists: PUT /v1/agents/${name} makes its next version`, { agent: name });
    return agent;
  }

  /** The agent's next version; `not_found` when the tenant has no agent of that name. */
  async next(tenantId: string, name: string, definition: NextAgentVersionBody): Promise<Agent> {
    for (let attempt = 0; attempt < NEXT_VERSION_TRIES; attempt++) {
      const latest = await this.latestVersion(tenantId, name);
      if (!latest) throw agentNotFound(name);
      const agent = stored(name, latest + 1, definition);
      if (await this.write(tenantId, agent)) return agent;
    }
    throw new SteerlineError('unavailable', `agent ${name} is being changed by many writers at once; send this again`, { agent: name, retryAfterSeconds: 1 });
  }

  /** One version, or the latest when `version` is absent; undefined when there is none. */
  async read(tenantId: string, name: string, version?: number): Promise<Agent | undefined> {
    const v = version ?? (await this.latestVersion(tenantId, name));
    if (!v) return undefined;
    const entry = await this.call(() => this.kv.get(key(tenantId, name, v)));
    return entry?.operation === 'PUT' ? AgentSchema.parse(decodeJson(entry.value)) : undefined;
  }

  /** The latest version of each of the tenant's agents, by name. */
  async list(tenantId: string): Promise<Agent[]> {
    const latest = new Map<string, number>();
    for (const k of await this.keys(`${tenantId}.>`)) {
      const [, name, v] = k.split('.');
      latest.set(name, Math.max(latest.get(name) ?? 0, Number(v)));
    }
    const agents = await Promise.all([...latest].map(([name, v]) => this.read(tenantId, name, v)));
    return agents.filter((a): a is Agent => a !== undefined).sort((a, b) => a.name.localeCompare(b.name));
  }

  private async latestVersion(tenantId: string, name: string): Promise<number> {
    return Math.max(0, ...(await this.keys(`${tenantId}.${name}.*`)).map((k) => Number(k.slice(k.lastIndexOf('.') + 1))));
  }

  /** Writes the version unless its key exists; false when it does. */
  private async write(tenantId: string, agent: Agent): Promise<boolean> {
    try {
      await this.kv.create(key(tenantId, agent.name, agent.version), encodeJson(agent));
      return true;
    } catch (err) {
      const code = jetStreamErrorCode(err);
      if (code === JetStreamApiCodes.StreamWrongLastSequence || code === JetStreamApiCodes.StreamWrongLastSequenceUnknown) return false;
      throw new SteerlineError('unavailable', `the agent store does not answer: ${(err as Error).message}`);
    }
  }

  private async keys(filter: string): Promise<string[]> {
    return this.call(async () => {
      const out: string[] = [];
      for await (const k of await this.kv.keys(filter)) out.push(k);
      return out;
    });
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      throw new SteerlineError('unavailable', `the agent store does not answer: ${(err as Error).message}`);
    }
  }
}

function key(tenantId: string, name: string, version: number): string {
  return `${tenantId}.${name}.${version}`;
}

function stored(name: string, version: number, definition: NextAgentVersionBody): Agent {
  return { name, version, createdAt: new Date().toISOString(), ...definition };
}

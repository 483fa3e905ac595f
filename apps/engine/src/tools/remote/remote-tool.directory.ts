import { Logger } from '@nestjs/common';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { ToolServiceDescriptionSchema, toolSubjects, type ToolServiceDescription, type ToolSubjects } from '@steerline/contracts';
import { decodeJson, describeTools } from '@steerline/runtime';
import type { Tool, ToolSource } from '../tool.registry';
import { remoteTool } from './remote-tool';

export interface RemoteToolOptions {
  /** How long a call waits for its answer unless the tool's description says otherwise. */
  callTimeoutMs: number;
  /** How often the engine asks every tool service to describe itself. */
  discoveryIntervalMs: number;
  /** How long one describe round collects answers. */
  discoveryWindowMs?: number;
}

export const DEFAULT_REMOTE_TOOL_OPTIONS: RemoteToolOptions = { callTimeoutMs: 60_000, discoveryIntervalMs: 30_000 };

/** A tool is forgotten after this many discovery rounds without a sign of it, so one slow answer does not hide it. */
const MISSED_ROUNDS = 3;

interface Known {
  tool: Tool;
  service: string;
  seenAt: number;
}

/**
 * The remote tools this engine offers. Discovery is push and pull: a describe
 * round at start (awaited, so a turn started right after "engine ready" sees the
 * tools of every running service), another every `discoveryIntervalMs`, and any
 * service's announcement at its start, taken at once. A tool whose service
 * stops stays listed until it has missed three rounds; a call in between gets
 * `tool_unavailable`, which the model sees.
 */
export class RemoteToolDirectory implements ToolSource {
  private readonly logger = new Logger('RemoteTools');
  private readonly known = new Map<string, Known>();
  private readonly ts: ToolSubjects;
  private announcements?: Subscription;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
    private readonly options: RemoteToolOptions = DEFAULT_REMOTE_TOOL_OPTIONS,
  ) {
    this.ts = toolSubjects(prefix);
  }

  async start(): Promise<void> {
    this.announcements = this.nc.subscribe(this.ts.announce, {
      callback: (err, msg) => {
        if (err) return this.logger.warn({ message: 'tool announcements failed', error: err.message });
        const parsed = ToolServiceDescriptionSchema.safeParse(safeDecode(msg.data));
        if (!parsed.success) return this.logger.warn({ message: 'ignored a malformed tool announcement' });
        // A throw here would unwind the NATS client's parser.
        try {
          this.learn(parsed.data, Date.now());
        } catch (err) {
          this.logger.error({ message: 'a tool announcement could not be taken', service: parsed.data.service, error: (err as Error)?.message });
        }
      },
    });
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.discoveryIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.announcements?.unsubscribe();
  }

  list(): Tool[] {
    return [...this.known.values()].map((k) => k.tool);
  }

  get(name: string): Tool | undefined {
    return this.known.get(name)?.tool;
  }

  has(name: string): boolean {
    return this.known.has(name);
  }

  /** One describe round: learn what answers, forget what has been silent too long. */
  async refresh(): Promise<void> {
    if (this.nc.isClosed() || this.nc.isDraining()) return;
    const started = Date.now();
    try {
      const descriptions = await describeTools(this.nc, this.prefix, this.options.discoveryWindowMs ?? 250);
      for (const d of descriptions) this.learn(d, started);
    } catch (err) {
      this.logger.warn({ message: 'tool discovery failed', error: (err as Error).message });
      return;
    }
    const forgetBefore = started - MISSED_ROUNDS * this.options.discoveryIntervalMs;
    for (const [name, k] of this.known) {
      if (k.seenAt < forgetBefore) {
        this.known.delete(name);
        this.logger.log({ message: 'remote tool forgotten: its service stopped answering', tool: name, service: k.service });
      }
    }
  }

  private learn(description: ToolServiceDescription, seenAt: number): void {
    for (const descriptor of description.tools) {
      const before = this.known.get(descriptor.name);
      if (before && before.service !== description.service) {
        this.logger.warn({ message: 'two services offer the same tool; the latest description wins', tool: descriptor.name, services: [before.service, description.service] });
      }
      if (!before) this.logger.log({ message: 'remote tool offered', tool: descriptor.name, service: description.service });
      this.known.set(descriptor.name, { tool: remoteTool(this.nc, this.ts, descriptor, this.options.callTimeoutMs), service: description.service, seenAt });
    }
  }
}

function safeDecode(data: Uint8Array): unknown {
  try {
    return decodeJson(data);
  } catch {
    return undefined;
  }
}

import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { decodeJson, encodeJson, type Subjects } from '@steerline/contracts';

export interface OwnedTurn {
  turnId: string;
  engineId: string;
  tenantId: string;
  conversationId: string;
}

/**
 * Who owns which running turn, kept in two KV buckets: `turns` (a key per
 * running turn, naming its engine) and `engines` (a key per live engine,
 * refreshed well within the bucket's TTL). A turn whose engine's key has
 * expired is orphaned; any engine may settle it.
 */
export class TurnOwnership {
  private timer?: NodeJS.Timeout;

  private constructor(
    private readonly turns: KV,
    private readonly engines: KV,
    readonly engineId: string,
    private readonly leaseMs: number,
  ) {}

  static async open(nc: NatsConnection, s: Subjects, engineId: string, leaseMs: number, replicas = 1): Promise<TurnOwnership> {
    const kvm = new Kvm(nc);
    const turns = await kvm.create(s.turnsBucket, { history: 1, replicas });
    const engines = await kvm.create(s.enginesBucket, { history: 1, ttl: leaseMs, replicas });
    const ownership = new TurnOwnership(turns, engines, engineId, leaseMs);
    await ownership.beat();
    ownership.timer = setInterval(() => void ownership.beat().catch(() => undefined), Math.max(100, Math.floor(leaseMs / 3)));
    ownership.timer.unref();
    return ownership;
  }

  private async beat(): Promise<void> {
    await this.engines.put(this.engineId, encodeJson({ at: new Date().toISOString() }));
  }

  async claim(turn: Omit<OwnedTurn, 'engineId'>): Promise<void> {
    await this.turns.put(turn.turnId, encodeJson({ ...turn, engineId: this.engineId }));
  }

  async release(turnId: string): Promise<void> {
    await this.turns.delete(turnId);
  }

  /**
   * Running turns whose engine no longer holds its lease, and this engine's own
   * turns that it no longer runs (stopped when the log was unreachable).
   */
  async orphans(runsHere: (turnId: string) => boolean): Promise<OwnedTurn[]> {
    const alive = new Map<string, boolean>();
    const out: OwnedTurn[] = [];
    for await (const key of await this.turns.keys()) {
      const entry = await this.turns.get(key);
      if (!entry || entry.operation !== 'PUT') continue;
      const turn = decodeJson(entry.value) as OwnedTurn;
      if (turn.engineId === this.engineId) {
        if (!runsHere(turn.turnId)) out.push(turn);
        continue;
      }
      if (!alive.has(turn.engineId)) {
        const lease = await this.engines.get(turn.engineId);
        alive.set(turn.engineId, !!lease && lease.operation === 'PUT');
      }
      if (!alive.get(turn.engineId)) out.push(turn);
    }
    return out;
  }

  /** Stops the heartbeat; the lease then runs out by itself. With `release`, it ends now. */
  async close(release: boolean): Promise<void> {
    clearInterval(this.timer);
    if (release) await this.engines.delete(this.engineId).catch(() => undefined);
  }

  get leaseDurationMs(): number {
    return this.leaseMs;
  }
}

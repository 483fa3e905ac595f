import { Kvm, type KV } from '@nats-io/kv';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { type Subjects } from '@steerline/contracts';
import { decodeJson, encodeJson } from '@steerline/runtime';

export interface OwnedTurn {
  turnId: string;
  engineId: string;
  tenantId: string;
  conversationId: string;
}

/** Every this many sweeps, all claims are listed, not only those of engines seen dying. */
const FULL_SWEEP_EVERY = 10;

/**
 * Who owns which running turn, kept in two KV buckets: `turns` (a key
 * `<engineId>.<turnId>` per running turn) and `engines` (a key per live engine,
 * refreshed well within the bucket's TTL). A turn whose engine's key has
 * expired is orphaned; any engine may settle it. Keys start with the engine's
 * id so that finding a dead engine's turns lists only those.
 */
export class TurnOwnership {
  private timer?: NodeJS.Timeout;
  private seenAlive = new Set<string>();
  /** Dead engines with a turn that a sweep could not settle: listed again on the next sweep, not only on a full one. */
  private unsettled = new Set<string>();
  private sweeps = 0;
  /** The turns this engine claimed and has not released: its own orphans are found here, not by listing its claims. */
  private readonly claimed = new Set<string>();

  private constructor(
    private readonly turns: KV,
    private readonly engines: KV,
    private readonly jsm: JetStreamManager,
    private readonly buckets: { turns: string; engines: string },
    readonly engineId: string,
  ) {}

  static async open(nc: NatsConnection, s: Subjects, engineId: string, leaseMs: number, replicas = 1): Promise<TurnOwnership> {
    const kvm = new Kvm(nc);
    const turns = await kvm.create(s.turnsBucket, { history: 1, replicas });
    const engines = await kvm.create(s.enginesBucket, { history: 1, ttl: leaseMs, replicas });
    const ownership = new TurnOwnership(turns, engines, await jetstreamManager(nc), { turns: s.turnsBucket, engines: s.enginesBucket }, engineId);
    await ownership.beat();
    ownership.timer = setInterval(() => void ownership.beat().catch(() => undefined), Math.max(100, Math.floor(leaseMs / 3)));
    ownership.timer.unref();
    return ownership;
  }

  private async beat(): Promise<void> {
    await this.engines.put(this.engineId, encodeJson({ at: new Date().toISOString() }));
  }

  private key(turnId: string, engineId = this.engineId): string {
    return `${engineId}.${turnId}`;
  }

  async claim(turn: Omit<OwnedTurn, 'engineId'>): Promise<void> {
    this.claimed.add(turn.turnId);
    await this.turns.put(this.key(turn.turnId), encodeJson({ ...turn, engineId: this.engineId }));
  }

  async release(turnId: string, engineId = this.engineId): Promise<void> {
    await this.turns.delete(this.key(turnId, engineId));
    if (engineId === this.engineId) this.claimed.delete(turnId);
  }

  /**
   * Running turns whose engine no longer holds its lease, and this engine's own
   * turns that it no longer runs (stopped when the log was unreachable). Lists
   * the claims of engines that were alive at the last sweep and are gone now;
   * every FULL_SWEEP_EVERY sweeps (and the first), all claims. This engine's
   * own claims are looked up in its memory: listing them from the bucket on
   * every sweep cost a listing as long as its running turns (100 000 keys every
   * half lease), which held up the claims of turns starting meanwhile.
   */
  async orphans(runsHere: (turnId: string) => boolean): Promise<OwnedTurn[]> {
    const alive = new Set<string>();
    for (const id of await this.keys(this.buckets.engines, '>')) {
      if ((await this.engines.get(id))?.operation === 'PUT') alive.add(id);
    }
    const gone = [...this.seenAlive].filter((id) => !alive.has(id));
    const full = this.sweeps % FULL_SWEEP_EVERY === 0;
    const retry = [...this.unsettled].filter((id) => !gone.includes(id) && id !== this.engineId);
    this.unsettled.clear();
    const filters = full ? ['>'] : [...gone, ...retry].map((id) => `${id}.>`);
    const keys = new Set<string>();
    for (const filter of filters) {
      for (const key of await this.keys(this.buckets.turns, filter)) {
        const engineId = key.slice(0, key.indexOf('.'));
        if (engineId !== this.engineId && !alive.has(engineId)) keys.add(key);
      }
    }
    for (const turnId of this.claimed) if (!runsHere(turnId)) keys.add(this.key(turnId));
    const out: OwnedTurn[] = [];
    for (const key of keys) {
      const entry = await this.turns.get(key);
      if (entry?.operation === 'PUT') out.push(decodeJson(entry.value) as OwnedTurn);
    }
    // Only a sweep that got this far counts: a failed one is repeated with the same engines gone.
    this.seenAlive = alive;
    this.sweeps += 1;
    return out;
  }

  /**
   * The keys of a bucket under a filter, from the stream's subject list: no
   * consumer is created, so a sweep works while a cluster node is down
   * (placing a consumer may wait on a dead peer). Deleted keys may be listed;
   * callers read the entry.
   */
  private async keys(bucket: string, filter: string): Promise<string[]> {
    const prefix = `$KV.${bucket}.`;
    const info = await this.jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}${filter}` });
    return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
  }

  /** A turn of this dead engine could not be settled now: the next sweep lists its claims again. */
  retryLater(engineId: string): void {
    this.unsettled.add(engineId);
  }

  /** Stops the heartbeat; the lease then runs out by itself. With `release`, it ends now. */
  async close(release: boolean): Promise<void> {
    clearInterval(this.timer);
    if (release) await this.engines.delete(this.engineId).catch(() => undefined);
  }
}

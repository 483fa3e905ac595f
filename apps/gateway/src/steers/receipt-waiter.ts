import { Inject, Injectable, Logger, Optional, type OnModuleDestroy } from '@nestjs/common';
import { Match, type Msg } from '@nats-io/transport-node';
import { decodeEvent, EVENT_TYPE_HEADER, STEER_ID_HEADER, STEER_SETTLEMENTS, type Receipt } from '@steerline/contracts';
import { GatewayMetrics } from '../observability/metrics';
import { settlementReceipt } from './receipts';
import { SettlementInterest, type InterestScope } from './settlement-interest';

const SETTLEMENTS: ReadonlySet<string> = new Set(STEER_SETTLEMENTS);
// A steer settles once, but a client may reuse its steerId in another turn;
// keeping a few early settlements lets `wait` pick the one of the right turn.
const EARLY_KEPT = 4;
/** How long a wait's subscription may take to be live before the steer is sent without it (its rechecks still find the settlement). */
const LISTEN_WAIT_MS = 2_000;

/** The steer waited for, and where its settlement will be appended (its conversation, or its turn's). */
export interface SettleScope extends InterestScope {
  steerId: string;
}

/** One caller's interest in a steer's settlement, from `register` until `cancel`. */
export interface SettleWait {
  /**
   * The steer's settlement receipt once its `SteeringDelivered`/`SteerDropped`
   * is seen (including one seen since `register`), or undefined after `ms`,
   * on abort, or when the gateway shuts down. `turnId` undefined: any turn.
   */
  wait(turnId: string | undefined, ms: number, signal?: AbortSignal): Promise<Receipt | undefined>;
  cancel(): void;
}

/**
 * Waits for steer settlements on the events of the conversations that this
 * gateway's callers wait on, and on nothing else (SettlementInterest): an
 * append elsewhere never wakes this gateway. Routing uses only the headers;
 * the JSON is decoded only for a steer someone waits for. `register` resolves
 * once the subscription is live on the server: register before sending the
 * command, so a settlement that races the command's reply is not missed.
 */
@Injectable()
export class ReceiptWaiter implements OnModuleDestroy {
  private readonly log = new Logger(ReceiptWaiter.name);
  private readonly waiters = new Map<string, Set<Registration>>();
  private readonly heard = (msg: Msg) => {
    // A throw here would unwind the NATS client's parser: one bad message must not take the gateway down.
    try {
      this.route(msg);
    } catch (failure) {
      this.log.error('event routing failed', { subject: msg.subject, error: (failure as Error)?.message });
    }
  };
  private closed = false;

  constructor(
    @Inject(SettlementInterest) private readonly interest: SettlementInterest,
    @Optional() @Inject(GatewayMetrics) metrics?: GatewayMetrics,
  ) {
    metrics?.countWaiting(() => this.pending);
    metrics?.gauge('steerline_receipt_waits_tenant_wide', 'Tenants this gateway listens to as a whole, for waits on turns whose conversation it does not know yet', () => interest.tenantWideCount);
  }

  /** Releases every wait (their callers answer with what they have) and stops listening. */
  onModuleDestroy(): void {
    this.closed = true;
    for (const set of [...this.waiters.values()]) for (const r of [...set]) r.cancel();
  }

  /**
   * Registers interest in the steer's settlement and resolves once it is
   * listened for. Should NATS not take the subscription (within
   * LISTEN_WAIT_MS), the wait still ends through its caller's read-model rechecks.
   */
  async register(scope: SettleScope): Promise<SettleWait> {
    const key = scope.steerId.toLowerCase();
    let leave: (() => void) | undefined;
    const registration = new Registration(scope.tenantId, this.closed, () => {
      leave?.();
      const set = this.waiters.get(key);
      set?.delete(registration);
      if (set?.size === 0) this.waiters.delete(key);
    });
    if (this.closed) return registration;
    const set = this.waiters.get(key) ?? new Set<Registration>();
    set.add(registration);
    this.waiters.set(key, set);
    const listening = this.interest.listen(scope, this.heard).then(
      (stop) => {
        if (registration.isDone) stop();
        else leave = stop;
      },
      (err: unknown) => this.log.warn('could not listen for a steer settlement; its wait relies on the read model', { steerId: scope.steerId, error: (err as Error)?.message }),
    );
    // A connection away from NATS holds the subscription's flush: the steer goes on without it after a while.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([listening, new Promise((resolve) => (timer = setTimeout(resolve, LISTEN_WAIT_MS)))]);
    clearTimeout(timer);
    return registration;
  }

  /** A turn's conversation, learnt from an answer, so later waits on the turn listen there at once. */
  remember(tenantId: string, turnId: string, conversationId: string): void {
    this.interest.remember(tenantId, turnId, conversationId);
  }

  /** How many registrations are open; a leak shows here. */
  get pending(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }

  private route(msg: Msg): void {
    const type = msg.headers?.get(EVENT_TYPE_HEADER, Match.IgnoreCase);
    if (!type || !SETTLEMENTS.has(type)) return;
    const steerId = msg.headers?.get(STEER_ID_HEADER, Match.IgnoreCase).toLowerCase();
    const set = steerId ? this.waiters.get(steerId) : undefined;
    if (!set) return;
    const decoded = decodeEvent(msg.data);
    if (!decoded.ok) {
      this.log.warn('settlement event not readable', { subject: msg.subject, steerId, reason: decoded.reason, detail: decoded.message });
      return;
    }
    const receipt = settlementReceipt(decoded.event);
    // The header routes; the event itself decides. Tenants are checked because
    // steerIds are client-chosen and may collide across tenants.
    if (!receipt || receipt.steerId.toLowerCase() !== steerId) return;
    for (const r of [...set]) if (r.tenantId === decoded.event.tenantId) r.offer(receipt);
  }
}

interface Waiting {
  turnId: string | undefined;
  resolve: (receipt: Receipt | undefined) => void;
  timer: NodeJS.Timeout;
  signal?: AbortSignal;
  onAbort: () => void;
}

class Registration implements SettleWait {
  private readonly early: Receipt[] = [];
  private waiting?: Waiting;

  constructor(
    readonly tenantId: string,
    private done: boolean,
    private readonly release: () => void,
  ) {}

  offer(receipt: Receipt): void {
    if (this.done) return;
    if (this.waiting && matches(receipt, this.waiting.turnId)) return this.finish(receipt);
    if (this.early.length < EARLY_KEPT) this.early.push(receipt);
  }

  wait(turnId: string | undefined, ms: number, signal?: AbortSignal): Promise<Receipt | undefined> {
    this.finish(undefined);
    const early = this.early.find((r) => matches(r, turnId));
    if (early) return Promise.resolve(early);
    if (this.done || ms <= 0 || signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const onAbort = () => this.finish(undefined);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting = { turnId, resolve, signal, onAbort, timer: setTimeout(onAbort, ms) };
    });
  }

  get isDone(): boolean {
    return this.done;
  }

  cancel(): void {
    this.finish(undefined);
    if (this.done) return;
    this.done = true;
    this.release();
  }

  private finish(receipt: Receipt | undefined): void {
    const w = this.waiting;
    if (!w) return;
    this.waiting = undefined;
    clearTimeout(w.timer);
    w.signal?.removeEventListener('abort', w.onAbort);
    w.resolve(receipt);
  }
}

function matches(receipt: Receipt, turnId: string | undefined): boolean {
  return turnId === undefined || receipt.turnId.toLowerCase() === turnId.toLowerCase();
}

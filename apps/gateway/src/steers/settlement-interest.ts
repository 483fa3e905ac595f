import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Subjects } from '@steerline/contracts';
import { ConversationTails, enter, release, type StoredListener } from '../events/conversation-tails';
import { EventLogClient } from '../nats/event-log.client';
import { NATS_CONNECTION, SUBJECTS } from '../nats/nats.tokens';
import { ReadModelsClient } from '../nats/read-models.client';
import { TurnConversations } from './turn-conversations';

/** How long a steer may wait for the read model to say which conversation its turn is in, before listening to the tenant. */
const LOOKUP_MS = 250;

/** Where a steer's settlement will be appended: its conversation when known, else its turn's. */
export interface InterestScope {
  tenantId: string;
  conversationId?: string;
  turnId?: string;
}

interface TenantInterest {
  /** Each listener once with its count of waits: one message, one call. */
  listeners: Map<StoredListener, number>;
  sub: Subscription;
  ready: Promise<void>;
}

/**
 * Subscribes a gateway to the events of the conversations whose steers it
 * waits on, and to nothing else: per conversation, the shared reference-counted
 * subscription of ConversationTails. A steer sent to a turn whose conversation
 * this gateway does not know (a turn started elsewhere, not yet in the read
 * model) is listened for on its tenant's events instead, for that wait only.
 */
@Injectable()
export class SettlementInterest implements OnModuleDestroy {
  private readonly log = new Logger('receipts');
  private readonly turns = new TurnConversations();
  private readonly tenants = new Map<string, TenantInterest>();

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
    @Inject(ConversationTails) private readonly tails: ConversationTails,
    @Inject(ReadModelsClient) private readonly reads: ReadModelsClient,
    @Inject(EventLogClient) private readonly eventLog: EventLogClient,
  ) {}

  onModuleDestroy(): void {
    for (const t of this.tenants.values()) t.sub.unsubscribe();
    this.tenants.clear();
  }

  /**
   * Hands `heard` the events where the scope's settlement will be appended,
   * from the moment this resolves (the subscription is live on the server)
   * until the returned function is called.
   */
  async listen(scope: InterestScope, heard: StoredListener): Promise<() => void> {
    const conversationId = scope.conversationId ?? (scope.turnId ? await this.conversationOf(scope.tenantId, scope.turnId) : undefined);
    if (conversationId) return this.tails.listen(scope.tenantId, conversationId, heard);
    return this.tenantWide(scope.tenantId, heard);
  }

  /** A turn's conversation, learnt from an answer (a conversation's steer names its turn). */
  remember(tenantId: string, turnId: string, conversationId: string): void {
    this.turns.remember(tenantId, turnId, conversationId);
  }

  /** Tenants listened to as a whole right now (turns of unknown conversation). */
  get tenantWideCount(): number {
    return this.tenants.size;
  }

  private async conversationOf(tenantId: string, turnId: string): Promise<string | undefined> {
    const known = this.turns.get(tenantId, turnId);
    if (known) return known;
    const lookup = this.reads
      .turn(tenantId, turnId)
      .then((turn) => {
        this.turns.remember(tenantId, turnId, turn.conversationId);
        return turn.conversationId;
      })
      .catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), LOOKUP_MS)));
    try {
      return await Promise.race([lookup, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async tenantWide(tenantId: string, heard: StoredListener): Promise<() => void> {
    let t = this.tenants.get(tenantId);
    if (!t) {
      const republished = await this.eventLog.republishes().catch(() => false);
      t = this.tenants.get(tenantId);
      if (!t) {
        const listeners = new Map<StoredListener, number>();
        const subject = republished ? this.s.tenantStored(tenantId) : this.s.tenantEvents(tenantId);
        const sub = this.nc.subscribe(subject, {
          callback: (err, msg) => (err ? this.log.error('tenant subscription failed', { error: err.message }) : fanOut(listeners, msg)),
        });
        t = { listeners, sub, ready: this.nc.flush() };
        this.tenants.set(tenantId, t);
      }
    }
    const interest = t;
    interest.listeners.set(heard, (interest.listeners.get(heard) ?? 0) + 1);
    return enter(interest.ready, () => {
      release(interest.listeners, heard);
      if (interest.listeners.size > 0) return;
      interest.sub.unsubscribe();
      if (this.tenants.get(tenantId) === interest) this.tenants.delete(tenantId);
    });
  }
}

function fanOut(listeners: Map<StoredListener, number>, msg: Msg): void {
  for (const heard of [...listeners.keys()]) heard(msg);
}

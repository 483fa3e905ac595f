import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, JetStreamApiCodes, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import { isTerminalTurnEvent, SteerlineError, type Subjects } from '@steerline/contracts';
import { jetStreamErrorCode, lastMessageOf, nextMessageOf, republishesStored } from '@steerline/runtime';
import { NATS_CONNECTION, SUBJECTS } from './nats.tokens';

/** Reads of the event log itself (not the read models, which lag it). */
@Injectable()
export class EventLogClient {
  private jsm?: Promise<JetStreamManager>;
  private republishing?: Promise<boolean>;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
  ) {}

  /**
   * The stream sequence of the conversation's last event, 0 when it has none.
   * Its subjects carry the tenant, so another tenant's conversation has no event
   * there and reads exactly like one that does not exist.
   */
  async lastSeq(tenantId: string, conversationId: string): Promise<number> {
    try {
      return (await lastMessageOf(await this.manager(), this.s.stream, this.s.conversationEventSubjects(tenantId, conversationId)))?.seq ?? 0;
    } catch (err) {
      // No stream yet means no conversation yet.
      if (jetStreamErrorCode(err) === JetStreamApiCodes.StreamNotFound) return 0;
      throw new SteerlineError('unavailable', `the event log does not answer: ${(err as Error).message}`);
    }
  }

  /**
   * Whether the log agrees that the turn has not ended, from the conversation's
   * last event (one get per subject it has, at once: one without subject partitions). One turn runs at a time, so the last event is
   * the running turn's own, or one of a turn queued behind it (its TurnQueued,
   * or its cancel before it started). A queued turn has not ended unless its own
   * end is last.
   */
  async turnOpen(tenantId: string, conversationId: string, turnId: string, as: 'running' | 'queued'): Promise<boolean> {
    const last = (await lastMessageOf(await this.manager(), this.s.stream, this.s.conversationEventSubjects(tenantId, conversationId)).catch(() => undefined))?.event;
    if (!last) return false;
    if (last.turnId === turnId) return !isTerminalTurnEvent(last);
    if (as === 'queued') return true;
    return last.type === 'TurnQueued' || (last.type === 'TurnCancelled' && (last.data as { steps: number }).steps === 0);
  }

  /**
   * The conversation's first event at or after stream sequence `fromSeq`, or
   * null when it has none yet: one direct get per subject it has (at once; one
   * without subject partitions), answered by any replica, no consumer. Event
   * streams replay with it.
   */
  async next(tenantId: string, conversationId: string, fromSeq: number): Promise<StoredMsg | null> {
    try {
      return await nextMessageOf(await this.manager(), this.s.stream, this.s.conversationEventSubjects(tenantId, conversationId), fromSeq);
    } catch (err) {
      throw new SteerlineError('unavailable', `the event log does not answer: ${(err as Error).message}`);
    }
  }

  /** Whether the stream republishes stored events (made by this release); asked once, again after a failure. */
  republishes(): Promise<boolean> {
    this.republishing ??= this.manager()
      .then((jsm) => jsm.streams.info(this.s.stream))
      .then((info) => republishesStored(info.config, this.s))
      .catch((err: unknown) => {
        this.republishing = undefined;
        throw new SteerlineError('unavailable', `the event log does not answer: ${(err as Error).message}`);
      });
    return this.republishing;
  }

  /** Throws, saying why, unless the event stream exists (readiness). */
  async assertStream(): Promise<void> {
    try {
      await (await this.manager()).streams.info(this.s.stream);
    } catch (err) {
      if (jetStreamErrorCode(err) === JetStreamApiCodes.StreamNotFound) throw new Error(`stream ${this.s.stream} not found`);
      throw err;
    }
  }

  /** One manager for the client's life; a failed attempt is retried on the next call. */
  private manager(): Promise<JetStreamManager> {
    this.jsm ??= jetstreamManager(this.nc, { checkAPI: false }).catch((err: unknown) => {
      this.jsm = undefined;
      throw err;
    });
    return this.jsm;
  }

  /** Throws `not_found` unless the tenant has this conversation. */
  async mustExist(tenantId: string, conversationId: string): Promise<void> {
    if ((await this.lastSeq(tenantId, conversationId)) === 0) {
      throw new SteerlineError('not_found', `conversation ${conversationId} not found`, { conversationId });
    }
  }
}

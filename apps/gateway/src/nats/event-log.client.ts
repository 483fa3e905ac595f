import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, JetStreamApiCodes, type JetStreamManager } from '@nats-io/jetstream';
import { isTerminalTurnEvent, jetStreamErrorCode, lastMessage, lastMessageSeq, SteerlineError, type Subjects } from '@steerline/contracts';
import { NATS_CONNECTION, SUBJECTS } from './nats.tokens';

/** Reads of the event log itself (not the read models, which lag it). */
@Injectable()
export class EventLogClient {
  private jsm?: Promise<JetStreamManager>;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
  ) {}

  /**
   * The stream sequence of the conversation's last event, 0 when it has none.
   * The subject carries the tenant, so another tenant's conversation has no
   * event here and reads exactly like one that does not exist.
   */
  async lastSeq(tenantId: string, conversationId: string): Promise<number> {
    try {
      return await lastMessageSeq(await this.manager(), this.s.stream, this.s.conversationEvents(tenantId, conversationId));
    } catch (err) {
      // No stream yet means no conversation yet.
      if (jetStreamErrorCode(err) === JetStreamApiCodes.StreamNotFound) return 0;
      throw new SteerlineError('unavailable', `the event log does not answer: ${(err as Error).message}`);
    }
  }

  /**
   * Whether the log says the turn still runs: the conversation's last event is
   * one of this turn's and not its end (one turn of a conversation runs at a time).
   */
  async turnRunning(tenantId: string, conversationId: string, turnId: string): Promise<boolean> {
    const last = await lastMessage(await this.manager(), this.s.stream, this.s.conversationEvents(tenantId, conversationId)).catch(() => undefined);
    return last?.event?.turnId === turnId && !isTerminalTurnEvent(last.event);
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

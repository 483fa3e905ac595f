import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { CONVERSATION_PAGE_AT_HEADER, CONVERSATION_READ_AHEAD_HEADER, ConversationQuery, ConversationsQuery, ENVELOPE_ROOM_BYTES, SteerQuery, SteerlineError, TurnQuery, parseBody, subjects, type Subjects } from '@steerline/contracts';
import { EncodedReply, maxPayload, serve, type Handler, type ServeErrorHandler } from '@steerline/runtime';
import { PERSISTENCE_CONFIG, type PersistenceConfig } from '../config';
import { NATS_CONNECTION } from '../connections';
import { ConversationList } from './conversation-list';
import { coveredThrough } from '../projector/coverage';
import { NextOnSubject } from '../projector/next-on-subject';
import { ReadQueries } from './read-queries';

/** The `qry.health` answer. Null fields: that part did not answer. */
export interface HealthView {
  database: boolean;
  /** The active read-model generation (it changes when `npm run rebuild` switches). */
  generation: number | null;
  checkpoint: number | null;
  lastSeq: number | null;
  /** The stream's last sequence minus the checkpoint: how far the read models trail the log. */
  lag: number | null;
  deadLetters: number | null;
  stalledConversations: number | null;
}

/** Answers the `qry.*` subjects in the persistence queue group (docs/design.md §4). */
@Injectable()
export class QueryResponders implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(QueryResponders.name);
  private readonly subscriptions: Subscription[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    @Inject(PERSISTENCE_CONFIG) private readonly config: PersistenceConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly queries: ReadQueries,
    private readonly conversations: ConversationList,
  ) {}

  onApplicationBootstrap(): void {
    const s = subjects(this.config.prefix);
    const onError: ServeErrorHandler = (err, context) => this.logger.error({ msg: 'query failed', subject: context.subject, error: String(err), code: (err as SteerlineError).code });
    const answer = (subject: string, handler: Handler, queue: string | undefined = s.persistenceQueue) => this.subscriptions.push(serve(this.nc, subject, this.tracked(handler), { queue, onError }));
    // Every page names this instance's own subject; a read that asks its next page there gets it read ahead (docs/design.md §14).
    const at = s.queryConversationAt(randomBytes(8).toString('hex'));
    // The page budget is read from the connection each time: the server's max_payload, never assumed.
    // Read ahead for a reader that asks its next page here: one that came here, or says it will.
    const page = (here: boolean) => async (body: unknown, msg: Msg) => {
      const readAhead = here || msg.headers?.has(CONVERSATION_READ_AHEAD_HEADER) === true;
      return withHeader(await this.queries.conversation(parseBody(ConversationQuery, body), maxPayload(this.nc) - ENVELOPE_ROOM_BYTES, readAhead), CONVERSATION_PAGE_AT_HEADER, at);
    };
    answer(s.queryConversation, page(false));
    answer(at, page(true), undefined);
    answer(s.queryConversations, (body) => this.conversations.page(parseBody(ConversationsQuery, body)));
    answer(s.queryTurn, (body) => this.queries.turn(parseBody(TurnQuery, body)));
    answer(s.querySteer, (body) => this.queries.steer(parseBody(SteerQuery, body)));
    answer(s.queryHealth, () => this.health());
  }

  /** Stops taking queries, then lets the ones being answered finish before the connections close. */
  async onModuleDestroy(): Promise<void> {
    await Promise.all(this.subscriptions.map((sub) => sub.drain().catch(() => undefined)));
    this.subscriptions.length = 0;
    await Promise.allSettled([...this.inFlight]);
    this.queries.ahead.clear();
  }

  async health(): Promise<HealthView> {
    const s = subjects(this.config.prefix, { subjectPartitions: this.config.subjectPartitions });
    // The checkpoints are read first: a stream sequence read after them can only be larger, so lag is never negative.
    const stats = await this.queries.stats(s.projectorConsumer);
    const jsm = await jetstreamManager(this.nc).catch(() => null);
    const lastSeq = jsm ? await jsm.streams.info(s.stream).then((info) => info.state.last_seq, () => null) : null;
    const lowest = stats && Math.min(...stats.checkpoints);
    // Partitions reading only their own subjects cover more than their checkpoints say (coveredThrough).
    const checkpoint = stats && jsm && lastSeq !== null ? await coveredThrough(this.coverage(jsm, s), s, stats.checkpoints, lastSeq).catch(() => lowest) : lowest;
    return {
      database: stats !== null,
      generation: stats?.generation ?? null,
      checkpoint,
      lastSeq,
      lag: checkpoint !== null && lastSeq !== null ? Math.max(0, lastSeq - checkpoint) : null,
      deadLetters: stats?.deadLetters ?? null,
      stalledConversations: stats?.stalledConversations ?? null,
    };
  }

  private covering?: NextOnSubject;

  /** What coveredThrough asked the stream, kept between health queries so that each asks only about what came since. */
  private coverage(jsm: JetStreamManager, s: Subjects): NextOnSubject {
    this.covering ??= new NextOnSubject(async () => jsm, s.stream);
    return this.covering;
  }

  private tracked(handler: Handler): Handler {
    return (body: unknown, msg: Msg) => {
      const work = Promise.resolve()
        .then(() => handler(body, msg))
        .catch((err: unknown) => {
          // Anything but a typed answer means the database could not answer: a client may retry (503).
          if (err instanceof SteerlineError) throw err;
          this.logger.error({ msg: 'query failed', subject: msg.subject, error: String(err) });
          throw new SteerlineError('unavailable', 'the read models are unavailable; retry shortly');
        });
      this.inFlight.add(work);
      void work.finally(() => this.inFlight.delete(work)).catch(() => undefined);
      return work;
    };
  }
}

/** The reply with one header more. */
function withHeader(reply: EncodedReply, name: string, value: string): EncodedReply {
  return new EncodedReply(reply.dataJson, (offset) => ({ ...reply.headers(offset), [name]: value }));
}

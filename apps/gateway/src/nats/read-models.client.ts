import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  CONVERSATION_PAGE_AT_HEADER,
  CONVERSATION_PAGE_HEADER,
  CONVERSATION_READ_AHEAD_HEADER,
  SteerlineError,
  type ConversationPage,
  type ConversationPageLayout,
  type ConversationQuery,
  type ConversationListPage,
  type ConversationsQuery,
  type Receipt,
  type SteerView,
  type Subjects,
  type TurnView,
} from '@steerline/contracts';
import { request, requestWithHeader } from '@steerline/runtime';
import { NATS_CONNECTION, QUERY_TIMEOUT_MS, SUBJECTS } from './nats.tokens';

/**
 * A conversation page as persistence answered it: laid out (its items' JSON where the
 * CONVERSATION_PAGE_HEADER says, in `body`), or, from a persistence without that header, decoded.
 */
export type ReadPage = { layout: ConversationPageLayout; body: Uint8Array; at?: string } | { page: ConversationPage };

export interface HealthReply {
  database: boolean;
}

/** Queries answered by the persistence service's queue group (docs/design.md §4). */
@Injectable()
export class ReadModelsClient {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SUBJECTS) private readonly s: Subjects,
  ) {}

  /**
   * One page; `next` says where the following one starts, and `at` (CONVERSATION_PAGE_AT_HEADER) the
   * instance to ask it of, which reads it ahead (docs/design.md §14). When nobody answers there any
   * more (that instance stopped), the page is asked of the queue group.
   */
  async conversation(query: ConversationQuery, at?: string): Promise<ReadPage> {
    // It says it asks the next page where the reply names: so the first page's instance reads the second ahead too.
    const ask = (subject: string) =>
      requestWithHeader<ConversationPage>(this.nc, subject, query, CONVERSATION_PAGE_HEADER, { timeoutMs: QUERY_TIMEOUT_MS, noResponders: 'unavailable', headers: { [CONVERSATION_READ_AHEAD_HEADER]: '1' } });
    const reply = at ? await ask(at).catch((err: unknown) => (isUnavailable(err) ? ask(this.s.queryConversation) : Promise.reject(err))) : await ask(this.s.queryConversation);
    if ('value' in reply) return { page: reply.value };
    const next = reply.headers.get(CONVERSATION_PAGE_AT_HEADER);
    return { layout: JSON.parse(reply.header) as ConversationPageLayout, body: reply.data, ...(next && { at: next }) };
  }

  conversations(query: ConversationsQuery): Promise<ConversationListPage> {
    return this.query(this.s.queryConversations, query);
  }

  turn(tenantId: string, turnId: string): Promise<TurnView> {
    return this.query(this.s.queryTurn, { tenantId, turnId });
  }

  async steer(tenantId: string, turnId: string, steerId: string): Promise<Receipt> {
    return receiptOf(await this.query<SteerView | Receipt>(this.s.querySteer, { tenantId, turnId, steerId }));
  }

  health(timeoutMs = QUERY_TIMEOUT_MS): Promise<HealthReply> {
    return request(this.nc, this.s.queryHealth, {}, { timeoutMs, noResponders: 'unavailable' });
  }

  private query<T>(subject: string, body: unknown): Promise<T> {
    return request<T>(this.nc, subject, body, { timeoutMs: QUERY_TIMEOUT_MS, noResponders: 'unavailable' });
  }
}

/**
 * The steer query may answer with the read model's `SteerView` (`id`) or with
 * a receipt (`steerId`); clients always get a receipt.
 */
export function receiptOf(view: SteerView | Receipt): Receipt {
  if ('steerId' in view) return view;
  const { id, turnId, status, position, text, step, boundary, requestStep, reason } = view;
  return { steerId: id, turnId, status, position, text, step, boundary, requestStep, reason };
}

function isUnavailable(err: unknown): boolean {
  return err instanceof SteerlineError && err.code === 'unavailable';
}

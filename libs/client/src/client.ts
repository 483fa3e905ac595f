import { errorFrom, SteerlineClientError } from './errors';
import { ExternalTurn } from './runner';
import { readSse } from './sse';
import { idleTimer, sleep, type IdleTimer } from './timers';
import type {
  Agent,
  AgentDefinition,
  AgentList,
  ApprovalAnswer,
  ConversationListPage,
  ConversationSteerOptions,
  ConversationView,
  DroppedReceipt,
  EventsOptions,
  ExternalTurnInput,
  RunnerLease,
  LiveMessage,
  ModelsAnswer,
  Receipt,
  StartTurnInput,
  StartedTurn,
  SteerlineEvent,
  SteerOptions,
  StreamedEvent,
  StreamedLive,
  ToolsAnswer,
  TurnView,
} from './types';

export interface ClientOptions {
  /** The gateway, e.g. `http://127.0.0.1:3000` (no `/v1`). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; omit for an open gateway. */
  apiKey?: string;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
}

const MAX_RECONNECT_DELAY_MS = 10_000;
/** Three of the gateway's default heartbeats (15 s): a stream silent for this long is dead. */
const DEFAULT_IDLE_TIMEOUT_MS = 45_000;

/** Stream messages that are not log events (docs/design.md §11): they have no `id:` line of their own. */
const LIVE_EVENTS = new Set(['ModelDelta', 'ToolProgress']);

/**
 * A typed client of the Steerline HTTP API. Every method throws
 * `SteerlineClientError` (with the API's error `code`) on an error answer,
 * except that a steer dropped within the wait is a receipt, not an error:
 * `steer`, `steerConversation` and `receipt` answer delivered / queued /
 * dropped alike.
 */
export class SteerlineClient {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  async createConversation(): Promise<{ id: string }> {
    return this.json('POST', '/v1/conversations');
  }

  /** Starts a turn; with `whenBusy: "queue"` while one runs, queues it. `cancel` works on a queued turn too. */
  startTurn(conversationId: string, input: StartTurnInput): Promise<StartedTurn> {
    return this.json('POST', `/v1/conversations/${seg(conversationId)}/turns`, { body: input });
  }

  /**
   * Starts a turn whose loop this process runs (docs/runner-protocol.md): the
   * handle holds the runner lease (renewed in the background until the turn
   * ends or `close()`), reports model answers and tool results, and answers
   * the steers to add before each model request.
   */
  async startExternalTurn(conversationId: string, input: ExternalTurnInput): Promise<ExternalTurn> {
    const started = await this.json<StartedTurn & { lease: RunnerLease }>('POST', `/v1/conversations/${seg(conversationId)}/turns`, { body: { ...input, runner: 'external' } });
    return this.attachExternalTurn(started.turnId, started.lease);
  }

  /** Takes up an external turn whose lease this process was handed (its token and leaseMs). */
  attachExternalTurn(turnId: string, lease: RunnerLease): ExternalTurn {
    return new ExternalTurn((method, path, init) => this.json(method, path, init), turnId, lease);
  }

  /** Steers a running turn. */
  steer(turnId: string, text: string, opts: SteerOptions = {}): Promise<Receipt> {
    const body = { text, ...lifecycle(opts) };
    return this.receiptOf('POST', `/v1/turns/${seg(turnId)}/steers`, body, opts);
  }

  /** Steers whatever turn of the conversation is running (or exactly `expectedTurnId`). */
  steerConversation(conversationId: string, text: string, opts: ConversationSteerOptions = {}): Promise<Receipt> {
    const body = { text, ...lifecycle(opts), ...(opts.expectedTurnId ? { expectedTurnId: opts.expectedTurnId } : {}) };
    return this.receiptOf('POST', `/v1/conversations/${seg(conversationId)}/steers`, body, opts);
  }

  /** A steer's receipt; with `waitSeconds`, once it is settled (or the wait ends). */
  receipt(turnId: string, steerId: string, opts: { waitSeconds?: number; signal?: AbortSignal } = {}): Promise<Receipt> {
    return this.receiptOf('GET', `/v1/turns/${seg(turnId)}/steers/${seg(steerId)}`, undefined, opts);
  }

  /** Replaces a queued steer's text (same position): the queued receipt. `already_delivered` / `steer_dropped` when too late. */
  editSteer(turnId: string, steerId: string, text: string): Promise<Receipt> {
    return this.json('PATCH', `/v1/turns/${seg(turnId)}/steers/${seg(steerId)}`, { body: { text } });
  }

  /** Withdraws a queued steer: its dropped receipt, text included. `already_delivered` when too late. */
  withdraw(turnId: string, steerId: string): Promise<DroppedReceipt> {
    return this.json('DELETE', `/v1/turns/${seg(turnId)}/steers/${seg(steerId)}`);
  }

  /** Lets a tool call that waits for approval run. The same decision again answers the same; `already_decided` after a deny. */
  approve(turnId: string, toolCallId: string, reason?: string): Promise<ApprovalAnswer> {
    return this.decide(turnId, toolCallId, 'approve', reason);
  }

  /** Denies a waiting tool call: the model reads a `denied` error result and the turn goes on. */
  deny(turnId: string, toolCallId: string, reason?: string): Promise<ApprovalAnswer> {
    return this.decide(turnId, toolCallId, 'deny', reason);
  }

  private decide(turnId: string, toolCallId: string, decision: 'approve' | 'deny', reason?: string): Promise<ApprovalAnswer> {
    const body = { decision, ...(reason !== undefined ? { reason } : {}) };
    return this.json('POST', `/v1/turns/${seg(turnId)}/approvals/${seg(toolCallId)}`, { body });
  }

  async cancel(turnId: string, reason?: string): Promise<void> {
    await this.json('POST', `/v1/turns/${seg(turnId)}/cancel`, reason === undefined ? {} : { body: { reason } });
  }

  /** Version 1 of a new agent; `already_exists` when the tenant has one of that name. */
  createAgent(name: string, definition: AgentDefinition): Promise<Agent> {
    return this.json('POST', '/v1/agents', { body: { name, ...definition } });
  }

  /** The agent's next version from a whole definition; earlier versions stay as they were. */
  updateAgent(name: string, definition: AgentDefinition): Promise<Agent> {
    return this.json('PUT', `/v1/agents/${seg(name)}`, { body: definition });
  }

  /** The agent's latest version, or `version`. */
  getAgent(name: string, version?: number): Promise<Agent> {
    return this.json('GET', `/v1/agents/${seg(name)}${version === undefined ? '' : `/versions/${version}`}`);
  }

  /** The tenant's agents, each at its latest version. */
  listAgents(): Promise<AgentList> {
    return this.json('GET', '/v1/agents');
  }

  /** The tools the tenant's turns are offered now. */
  listTools(): Promise<ToolsAnswer> {
    return this.json('GET', '/v1/tools');
  }

  /** The model providers and endpoints configured (never a key). */
  listModels(): Promise<ModelsAnswer> {
    return this.json('GET', '/v1/models');
  }

  getTurn(turnId: string): Promise<TurnView> {
    return this.json('GET', `/v1/turns/${seg(turnId)}`);
  }

  /** The caller's conversations, newest first; pass a page's `next` as `before` for the older ones. */
  listConversations(page: { limit?: number; before?: string } = {}): Promise<ConversationListPage> {
    const query = new URLSearchParams();
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.before !== undefined) query.set('before', page.before);
    const qs = query.toString() ? `?${query}` : '';
    return this.json('GET', `/v1/conversations${qs}`);
  }

  getConversation(conversationId: string, page: { afterMessage?: number; limit?: number } = {}): Promise<ConversationView> {
    const query = new URLSearchParams();
    if (page.afterMessage !== undefined) query.set('afterMessage', String(page.afterMessage));
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    const qs = query.toString() ? `?${query}` : '';
    return this.json('GET', `/v1/conversations/${seg(conversationId)}${qs}`);
  }

  /**
   * The conversation's events, replayed from the log then followed live, for
   * as long as the caller iterates. When the stream drops (a network error,
   * a gateway restart) it reconnects by itself with `Last-Event-ID`, so the
   * caller sees every event once, in log order. Errors that retrying cannot
   * fix (`not_found`, `unauthorized`, `invalid_request`) are thrown.
   */
  events(conversationId: string, opts: EventsOptions & { live: true }): AsyncGenerator<StreamedEvent | StreamedLive>;
  events(conversationId: string, opts?: EventsOptions): AsyncGenerator<StreamedEvent>;
  async *events(conversationId: string, opts: EventsOptions = {}): AsyncGenerator<StreamedEvent | StreamedLive> {
    let lastId = opts.after ?? 0;
    let failures = 0;
    const baseDelay = opts.reconnectDelayMs ?? 500;
    while (!opts.signal?.aborted) {
      const controller = new AbortController();
      let idle: IdleTimer | undefined;
      const abort = () => controller.abort();
      opts.signal?.addEventListener('abort', abort, { once: true });
      try {
        const res = await this.fetch(`${this.baseUrl}/v1/conversations/${seg(conversationId)}/events${opts.live || opts.onLive ? '' : '?live=0'}`, {
          headers: { ...this.auth(), accept: 'text/event-stream', ...(lastId > 0 ? { 'last-event-id': String(lastId) } : {}) },
          signal: controller.signal,
        });
        if (!res.ok || !res.body) {
          const err = await errorFrom(res);
          if (!retryable(err)) throw err;
          throw new StreamDropped(err.message);
        }
        let fresh = false;
        // Heartbeats count as bytes: only a stream that sends nothing at all is taken for dead.
        idle = idleTimer(opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, () => controller.abort());
        for await (const message of readSse(res.body, idle.touch)) {
          // Live messages carry no id: line, so the parser's id is still the last event's: never a position to resume from.
          if (message.hasId === false || LIVE_EVENTS.has(message.event)) {
            if (LIVE_EVENTS.has(message.event)) {
              const data = JSON.parse(message.data);
              opts.onLive?.({ type: message.event, data });
              if (opts.live) yield { live: true, type: message.event as LiveMessage['type'], message: data as LiveMessage };
            }
            continue;
          }
          const id = Number(message.id);
          // Anything else without a new log position is not an event to hand out.
          if (!Number.isSafeInteger(id) || id <= lastId) continue;
          lastId = id;
          failures = 0;
          fresh = true;
          yield { id, type: message.event as SteerlineEvent['type'], event: JSON.parse(message.data) as SteerlineEvent };
        }
        // The server ended the stream (it is shutting down): resume, elsewhere if need be;
        // at once after progress, with a pause otherwise, so a failing server is not hammered.
        if (!fresh) throw new StreamDropped('the stream ended without a new event');
      } catch (err) {
        if (opts.signal?.aborted) return;
        if (err instanceof SteerlineClientError) throw err;
        failures++;
        if (opts.maxReconnects !== undefined && failures > opts.maxReconnects) {
          throw new SteerlineClientError('unavailable', `the event stream failed ${failures} times: ${(err as Error).message}`, 0, { lastEventId: lastId });
        }
        await sleep(Math.min(MAX_RECONNECT_DELAY_MS, baseDelay * 2 ** Math.max(0, failures - 1)), opts.signal);
      } finally {
        opts.signal?.removeEventListener('abort', abort);
        idle?.stop();
        // Ends the HTTP request when the caller stops iterating (break, return, throw).
        controller.abort();
      }
    }
  }

  private async receiptOf(method: string, path: string, body: unknown, opts: { waitSeconds?: number; signal?: AbortSignal }): Promise<Receipt> {
    const headers = opts.waitSeconds ? { prefer: `wait=${Math.max(0, Math.floor(opts.waitSeconds))}` } : undefined;
    try {
      return await this.json<Receipt>(method, path, { body, headers, signal: opts.signal });
    } catch (err) {
      // The API answers a drop as the error steer_dropped; here it is the receipt it stands for.
      if (err instanceof SteerlineClientError && err.code === 'steer_dropped') {
        const { steerId, turnId, position, text, reason, nextTurnId } = err.details as Omit<DroppedReceipt, 'status'>;
        return { status: 'dropped', steerId, turnId, position, text, reason, ...(nextTurnId ? { nextTurnId } : {}) };
      }
      throw err;
    }
  }

  private async json<T>(method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<T> {
    let res: Response;
    try {
      res = await this.fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { ...this.auth(), ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: init.signal,
      });
    } catch (err) {
      throw new SteerlineClientError('unavailable', `the gateway cannot be reached: ${(err as Error).message}`, 0);
    }
    if (!res.ok) throw await errorFrom(res);
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  private auth(): Record<string, string> {
    return this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {};
  }
}

/** A stream that ended for a reason a reconnect may cure. */
class StreamDropped extends Error {}

function retryable(err: SteerlineClientError): boolean {
  return err.status >= 500 || err.status === 0 || err.code === 'rate_limited';
}

function lifecycle(opts: SteerOptions): Record<string, unknown> {
  return {
    ...(opts.steerId ? { steerId: opts.steerId } : {}),
    ...(opts.onTurnEnd ? { onTurnEnd: opts.onTurnEnd } : {}),
    ...(opts.ttlMs !== undefined ? { ttlMs: opts.ttlMs } : {}),
    ...(opts.urgency ? { urgency: opts.urgency } : {}),
  };
}

function seg(id: string): string {
  return encodeURIComponent(id);
}

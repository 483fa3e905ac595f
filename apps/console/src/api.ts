import { SteerlineClient, SteerlineClientError, type Receipt, type StartedTurn, type StartTurnInput } from '@steerline/client';

/**
 * The page's one way to the gateway: the typed client users get, with the API
 * key the person typed (kept in sessionStorage: gone when the tab closes).
 */
const KEY_STORAGE = 'steerline.apiKey';

export function storedKey(): string | undefined {
  return sessionStorage.getItem(KEY_STORAGE) ?? undefined;
}

export function storeKey(key: string | undefined): void {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export interface Api {
  client: SteerlineClient;
  /** PATCH /v1/turns/:tid/steers/:sid {text}: a queued steer's new text. */
  editSteer(turnId: string, steerId: string, text: string): Promise<Receipt>;
  /** POST /v1/turns/:tid/approvals/:toolCallId {decision}. */
  decide(turnId: string, toolCallId: string, decision: 'approve' | 'deny'): Promise<unknown>;
  /** POST /v1/conversations/:cid/turns with whenBusy: queue: a follow-up turn that starts when the running one ends. */
  queueTurn(conversationId: string, input: Omit<StartTurnInput, 'whenBusy'>): Promise<StartedTurn>;
}

/** `onUnauthorized` runs on every 401, so the page can ask for a key again. */
export function createApi(onUnauthorized: () => void): Api {
  const apiKey = storedKey();
  const watched: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (res.status === 401) onUnauthorized();
    return res;
  };
  const client = new SteerlineClient({ baseUrl: location.origin, apiKey, fetch: watched });
  return {
    client,
    editSteer: (turnId, steerId, text) => client.editSteer(turnId, steerId, text),
    decide: (turnId, toolCallId, decision) => (decision === 'approve' ? client.approve(turnId, toolCallId) : client.deny(turnId, toolCallId)),
    queueTurn: (conversationId, input) => client.startTurn(conversationId, { ...input, whenBusy: 'queue' }),
  };
}

/** A short sentence for an error, for the status line. */
export function describeError(err: unknown): string {
  if (err instanceof SteerlineClientError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Every route's operationId, tag and description, keyed by `METHOD /path` as
 * the OpenAPI document spells it. Required: a route Nest registers that is
 * missing here gets no operationId, tag or description, which Spectral's
 * `spectral:oas` ruleset reports and the contract gate (test/contract/openapi.spec.ts)
 * fails on, naming the key to add; an entry whose route is gone fails there too.
 *
 * operationIds are part of the API: generated clients name their methods after
 * them, so an id never changes once published.
 */

export const TAGS = [
  { name: 'steers', description: 'Steer a running turn and follow each steer to its one receipt.' },
  { name: 'turns', description: 'Start, read and cancel turns.' },
  { name: 'conversations', description: 'Conversations, their read model and their live events.' },
  { name: 'operations', description: 'Health, readiness and metrics for operators.' },
  { name: 'docs', description: 'This reference and the machine-readable document behind it.' },
] as const;

export type Tag = (typeof TAGS)[number]['name'];

export interface OperationMeta {
  /** Stable, camelCase: the method name in generated clients. */
  operationId: string;
  tag: Tag;
  /** What the route does and what a client should know, beyond its one-line summary. */
  description: string;
}

export const OPERATIONS: Record<string, OperationMeta> = {
  'GET /v1/conversations': {
    operationId: 'listConversations',
    tag: 'conversations',
    description:
      'The tenant’s conversations, newest first, each with its latest turn (prompt cut to 200 characters). ' +
      'Paged by keyset: pass a page’s `next` as `before` for the next, older page; conversations created meanwhile never shift a page.',
  },
  'POST /v1/turns/{tid}/steers': {
    operationId: 'steerTurn',
    tag: 'steers',
    description:
      'Queues a steer for the running turn; the engine delivers it at the next boundary (after tool results, or as a continuation). ' +
      'Answers with the steer’s receipt: 202 queued at once, or with `Prefer: wait=<s>` the settled receipt (200 delivered, 409 steer_dropped). ' +
      'Resubmitting the same `steerId` is idempotent. ' +
      'With `urgency: "interrupt"` the engine stops what the turn is doing first — cuts the answer being written (ModelInterrupted), gives the running tool calls an `interrupted` result, denies a pending approval — ' +
      'and delivers it, with every steer queued before it, at boundary `interrupt`; calls of non-interruptible tools are waited for (`waitingFor` in the receipt).',
  },
  'POST /v1/conversations/{cid}/steers': {
    operationId: 'steerConversation',
    tag: 'steers',
    description:
      'Steers whichever turn of the conversation is running; with `expectedTurnId` it is refused (turn_moved_on) when another turn runs. ' +
      'Same receipts and `Prefer: wait` as steerTurn.',
  },
  'GET /v1/turns/{tid}/steers/{sid}': {
    operationId: 'getSteerReceipt',
    tag: 'steers',
    description: 'The steer’s current receipt; with `Prefer: wait=<s>` the answer waits for its settlement (delivered or dropped) up to the wait.',
  },
  'DELETE /v1/turns/{tid}/steers/{sid}': {
    operationId: 'withdrawSteer',
    tag: 'steers',
    description: 'Withdraws a steer that is still queued: it is dropped with reason withdrawn and its text handed back. A delivered steer cannot be withdrawn.',
  },
  'PATCH /v1/turns/{tid}/steers/{sid}': {
    operationId: 'editSteer',
    tag: 'steers',
    description:
      'Replaces a queued steer’s text; it keeps its position and the model reads the last edit. Decided by the turn itself, so an edit and ' +
      'the boundary never both win: the answer is the queued receipt with the new text, or 409 already_delivered / steer_dropped.',
  },
  'POST /v1/turns/{tid}/approvals/{toolCallId}': {
    operationId: 'decideToolApproval',
    tag: 'turns',
    description:
      'Approves or denies a tool call that waits for a person (a turn started with `approvals`). Approved: the call runs. Denied: the model reads ' +
      'a `denied` error result and the turn goes on. The same decision again answers the same; the other one is refused (already_decided).',
  },
  'POST /v1/conversations/{cid}/turns': {
    operationId: 'startTurn',
    tag: 'turns',
    description:
      'Starts a turn on an engine, which then owns it; the answer comes as soon as it has started, and the turn runs on. One turn runs per conversation at a time: ' +
      'with `whenBusy: "queue"` a start while one runs is queued behind it (status queued, position) and starts by itself in order.',
  },
  'GET /v1/turns/{tid}': {
    operationId: 'getTurn',
    tag: 'turns',
    description: 'The turn’s read model: status, steps and steer counts, as far as the projector has read the log.',
  },
  'POST /v1/turns/{tid}/cancel': {
    operationId: 'cancelTurn',
    tag: 'turns',
    description: 'Asks the owning engine to cancel the turn: queued steers are dropped (turn_cancelled) first, then TurnCancelled ends it.',
  },
  'POST /v1/conversations': {
    operationId: 'createConversation',
    tag: 'conversations',
    description: 'Creates a conversation for the caller’s tenant; turns are started in it.',
  },
  'GET /v1/conversations/{cid}': {
    operationId: 'getConversation',
    tag: 'conversations',
    description: 'The conversation’s read model: its turns, the messages in the order the model saw them (paged) and every steer with its status.',
  },
  'GET /v1/conversations/{cid}/events': {
    operationId: 'streamConversationEvents',
    tag: 'conversations',
    description: 'Server-Sent Events: the conversation’s events from the log, then live; resumable on any gateway with Last-Event-ID.',
  },
  'GET /healthz': { operationId: 'getHealth', tag: 'operations', description: 'Liveness: the process answers. Needs no API key.' },
  'GET /readyz': {
    operationId: 'getReadiness',
    tag: 'operations',
    description: 'Readiness: NATS, the event stream and the database (asked through persistence) answer. Needs no API key.',
  },
  'GET /metrics': { operationId: 'getMetrics', tag: 'operations', description: 'Prometheus metrics of this gateway: HTTP requests by route and status, requests waiting on Prefer: wait, event streams. Steers and turns are counted by the engine, on its own /metrics.' },
  'GET /docs': {
    operationId: 'getReference',
    tag: 'docs',
    description: 'The interactive reference in a browser; `?plain` (or a client that does not ask for HTML) gets a plain page listing the routes.',
  },
  'GET /docs/openapi.json': { operationId: 'getOpenApiDocument', tag: 'docs', description: 'This OpenAPI 3.1 document, generated from the routes the gateway serves.' },
  'GET /docs/assets/{file}': {
    operationId: 'getReferenceAsset',
    tag: 'docs',
    description: 'A file of the reference page (the Swagger UI bundle, its styles, the page’s script), served by the gateway itself.',
  },
};

/** `POST /v1/turns/:tid/steers` → `POST /v1/turns/{tid}/steers`. */
export function operationKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path.replace(/:(\w+)/g, '{$1}')}`;
}

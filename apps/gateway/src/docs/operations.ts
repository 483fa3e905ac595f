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
  { name: 'agents', description: 'Versioned agents: a tenant’s named model, instructions, settings, tools and approvals, which a turn runs by name.' },
  { name: 'discovery', description: 'What a tenant’s turns can use: the tools they are offered and the model endpoints configured.' },
  { name: 'runners', description: 'External turns: the process that runs a turn’s loop reports what it did, and hears which steers to add (docs/runner-protocol.md).' },
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
      'with `whenBusy: "queue"` a start while one runs is queued behind it (status queued, position) and starts by itself in order. ' +
      'With `runner: "external"` the caller runs the turn’s loop itself and the answer carries its runner lease (see the runners routes).',
  },
  'POST /v1/turns/{tid}/runner/answer': {
    operationId: 'reportRunnerAnswer',
    tag: 'runners',
    description:
      'After each model answer of an external turn: appends ModelResponded and each call’s ToolCallStarted (or ToolApprovalRequested). ' +
      'A text-only answer is decided at once: `model` with the steers of a continuation, or `end`. Only the lease holder may report.',
  },
  'POST /v1/turns/{tid}/runner/results': {
    operationId: 'reportRunnerResults',
    tag: 'runners',
    description:
      'Before model request n+1 of an external turn: appends the step’s ToolCallFinished events; after its last call, the steers due ' +
      '(SteeringDelivered, write-ahead) and ModelRequested n+1, and answers those steers for the runner to add. All of a report or none of it is appended.',
  },
  'POST /v1/turns/{tid}/runner/fail': {
    operationId: 'reportRunnerFailure',
    tag: 'runners',
    description: 'Fails an external turn with the runner’s code and message: queued steers dropped turn_failed, then TurnFailed.',
  },
  'POST /v1/turns/{tid}/runner/lease': {
    operationId: 'renewRunnerLease',
    tag: 'runners',
    description:
      'Renews an external turn’s runner lease (STEERLINE_RUNNER_LEASE_MS); a lapsed lease fails the turn runner_lost. With `waitMs` it is a ' +
      'long poll answered at once when the turn ends, which is how a cancel from any client reaches the runner.',
  },
  'POST /v1/turns/{tid}/runner/approvals/{toolCallId}': {
    operationId: 'awaitRunnerApproval',
    tag: 'runners',
    description: 'Waits up to `waitMs` for the decision on an external turn’s call that asked for approval: approved, denied, or still pending.',
  },
  'POST /v1/turns/{tid}/runner/interrupted': {
    operationId: 'reportRunnerInterrupted',
    tag: 'runners',
    description:
      'An external turn’s runner stopped step n for an urgent steer (the lease answer or a tools answer asked it to): a cut answer is recorded ' +
      'ModelInterrupted with its partial text, the step’s unreported calls finish interrupted, the steers are delivered at boundary interrupt and ' +
      'ModelRequested n+1 appended; the answer carries the steers and the cut step as the next request presents it. A report for a step the turn has left is answered with what comes next, nothing decided.',
  },
  'POST /v1/turns/{tid}/runner/live': {
    operationId: 'publishRunnerLive',
    tag: 'runners',
    description: 'Publishes an external turn’s live output (model text deltas, tool progress) to the conversation’s watchers, as for the engine’s own turns.',
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
  'POST /v1/agents': {
    operationId: 'createAgent',
    tag: 'agents',
    description:
      'Creates version 1 of a named agent for the caller’s tenant: a model, and optionally instructions, settings, a tool allow-list and approvals. ' +
      'A turn runs it with `agent: "<name>"` (the latest version) or `"<name>@<version>"`; the turn’s own fields override the agent’s.',
  },
  'GET /v1/agents': { operationId: 'listAgents', tag: 'agents', description: 'The tenant’s agents, each at its latest version, by name. Another tenant’s agents are never listed.' },
  'GET /v1/agents/{name}': { operationId: 'getAgent', tag: 'agents', description: 'The agent’s latest version: what a turn naming it without a version runs.' },
  'PUT /v1/agents/{name}': {
    operationId: 'updateAgent',
    tag: 'agents',
    description: 'Makes the agent’s next version from a whole definition (not a patch). Earlier versions stay as they were: a version never changes, and turns that named it keep it.',
  },
  'GET /v1/agents/{name}/versions/{version}': { operationId: 'getAgentVersion', tag: 'agents', description: 'One version of the agent, as it was made.' },
  'GET /v1/tools': {
    operationId: 'listTools',
    tag: 'discovery',
    description:
      'The tools the tenant’s turns are offered now, as the engine has them: built-in tools, remote tools of services over NATS, and MCP servers’ tools. ' +
      'Each with its description, the JSON Schema of its arguments, its source and whether it asks for approval by default. A turn’s `tools` allow-list picks from these.',
  },
  'GET /v1/models': {
    operationId: 'listModels',
    tag: 'discovery',
    description: 'The model providers and the named endpoints the engines have configured (STEERLINE_MODELS, and `default` for the OPENAI_* / ANTHROPIC_* variables). Never a key or a header value.',
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

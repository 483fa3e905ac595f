import { PubHeaders } from '@nats-io/jetstream';
import { z } from 'zod';
import {
  AwaitApprovalCommand,
  CancelTurnCommand,
  PublishLiveCommand,
  ReportInterruptedCommand,
  RenewLeaseCommand,
  ReportAnswerCommand,
  ReportResultsCommand,
  RunnerFailCommand,
  ConversationQuery,
  ConversationsQuery,
  CreateConversationCommand,
  CURRENT_VERSIONS,
  DecideApprovalCommand,
  EditSteerCommand,
  EVENT_TYPE_HEADER,
  EVENT_TYPES,
  eventJsonSchema,
  type EventType,
  isSteerEventType,
  type JsonSchema,
  ModelDeltaSchema,
  readerJsonSchema,
  ReplyDataSchemas,
  replySchema,
  StartTurnCommand,
  STEER_ID_HEADER,
  SteerQuery,
  subjects,
  SubmitConversationSteerCommand,
  SubmitSteerCommand,
  ToolProgressSchema,
  TurnQuery,
  WithdrawSteerCommand,
  ModelsQuery,
  ToolsQuery,
} from '@steerline/contracts';
import { eventConsumerConfig } from './consumer-kit';
import { streamConfig } from './nats';

/**
 * The AsyncAPI 3.1 document of the NATS contract, built from the same zod
 * schemas and subject builders the services use, so it cannot describe a
 * subject or a field they do not have. `npm run contracts:generate` writes it
 * to libs/contracts/asyncapi.json; the contract gate checks it is current.
 */

/** The newest AsyncAPI version that both the official parser and Spectral's asyncapi ruleset read. */
export const ASYNCAPI_VERSION = '3.1.0';

const TAGS = [
  { name: 'events', description: 'The event log: one JetStream subject per conversation.' },
  { name: 'commands', description: 'Request/reply commands, answered by an engine.' },
  { name: 'queries', description: 'Request/reply queries, answered by persistence from the read models.' },
];

/** The document's own version: bump the major when an event type gets a new version. */
export const ASYNCAPI_DOC_VERSION = '2.0.0';

const EVENT_SUMMARIES: Record<EventType, string> = {
  ConversationCreated: 'A conversation exists; the first event of its subject (seq 0, no turn).',
  TurnStarted: 'A turn began: prompt, model, limits and the engine that owns it.',
  TurnQueued: 'A turn was queued behind the running one; it starts (TurnStarted) when the turns before it have ended, unless cancelled first.',
  TurnResumed: 'Another engine (or the same one, restarted) adopted the running turn from the log and goes on with it; attempt counts the resumes.',
  ModelRequested: 'The engine sent model request `step`, carrying the steers in `steerIds`.',
  ModelResponded: 'The model answered step `step`: text and tool calls.',
  ModelInterrupted: 'An urgent steer cut the answer of step `step` while it was being written; `partialText` is what it had written. Never an answer.',
  ToolCallStarted: 'A tool call of step `step` started.',
  ToolCallFinished: 'A tool call finished, with its output or error.',
  ToolApprovalRequested: 'A tool call of step `step` waits for a person’s decision before it starts.',
  ToolApprovalDecided: 'A waiting tool call was approved or denied, by the person, the timeout or the turn’s end.',
  SteerQueued: 'A steer was accepted into the turn’s queue at `position`; `urgency: interrupt` cuts the step it arrives in.',
  SteeringDelivered: 'A steer was delivered at a boundary; the model request `requestStep` carries `rendered`.',
  SteerEdited: 'A queued steer’s text was replaced; its position is unchanged and the model will read `text`.',
  SteerDropped: 'A queued steer was settled without delivery; `text` is handed back.',
  TurnCompleted: 'The turn ended with the model’s final text.',
  TurnCancelled: 'The turn was cancelled; queued steers were dropped first.',
  TurnFailed: 'The turn failed; queued steers were dropped first.',
};

interface RequestSpec {
  id: string;
  subject: string;
  summary: string;
  request: z.ZodType;
  reply: z.ZodType;
  /** The NATS queue group of the responders, when any member may answer. */
  queue?: string;
}

/** A request answered as another one is (its messages and tag), at a subject of its own. */
interface SameAsSpec {
  id: string;
  subject: string;
  summary: string;
  sameAs: RequestSpec;
}

// Placeholders that pass the subject-token check, turned into AsyncAPI `{parameter}`s.
const p = subjects('__prefix__');
const placeholders = (text: string) => text.replace(/__(\w+?)__/g, '{$1}');
const TURN = '__turnId__';
const CONVERSATION = '__conversationId__';

function requestSpecs(): RequestSpec[] {
  const r = ReplyDataSchemas;
  return [
    { id: 'createConversation', subject: p.createConversation, summary: 'Create a conversation (appends ConversationCreated).', request: CreateConversationCommand, reply: r.createConversation, queue: p.engineQueue },
    { id: 'startTurn', subject: p.startTurn, summary: 'Start a turn; any engine may take it and then owns it.', request: StartTurnCommand, reply: r.startTurn, queue: p.engineQueue },
    { id: 'queueTurn', subject: p.conversationQueue(CONVERSATION), summary: 'A start with whenBusy "queue", forwarded to the engine that owns the conversation’s running turn.', request: StartTurnCommand, reply: r.startTurn },
    { id: 'steerTurn', subject: p.turnSteer(TURN), summary: 'Steer a running turn by id; answered by its owner only (no responders: turn_not_running).', request: SubmitSteerCommand, reply: r.steer },
    { id: 'steerConversation', subject: p.conversationSteer(CONVERSATION), summary: 'Steer the running turn of a conversation, optionally guarded by expectedTurnId.', request: SubmitConversationSteerCommand, reply: r.steer },
    { id: 'editSteer', subject: p.editSteer(TURN), summary: 'Replace a queued steer’s text (SteerEdited); already_delivered or steer_dropped once settled.', request: EditSteerCommand, reply: r.steer },
    { id: 'withdrawSteer', subject: p.withdraw(TURN), summary: 'Withdraw a queued steer (SteerDropped withdrawn).', request: WithdrawSteerCommand, reply: r.withdraw },
    { id: 'decideApproval', subject: p.decideApproval(TURN), summary: 'Approve or deny a tool call waiting for a decision; the same decision again answers the same.', request: DecideApprovalCommand, reply: r.decideApproval },
    { id: 'cancelTurn', subject: p.cancel(TURN), summary: 'Cancel a running turn; a full queue never blocks it.', request: CancelTurnCommand, reply: r.cancel },
    { id: 'runnerAnswer', subject: p.runnerAnswer(TURN), summary: 'An external turn’s runner reports a model answer (ModelResponded, its calls); the answer says what comes next.', request: ReportAnswerCommand, reply: r.runnerAnswer },
    { id: 'runnerResults', subject: p.runnerResults(TURN), summary: 'An external turn’s runner reports tool results; after the step’s last one the steers due are delivered and the next request appended.', request: ReportResultsCommand, reply: r.runnerResults },
    { id: 'runnerFail', subject: p.runnerFail(TURN), summary: 'An external turn’s runner fails the turn (TurnFailed with its code).', request: RunnerFailCommand, reply: r.runnerFail },
    { id: 'runnerLease', subject: p.runnerLease(TURN), summary: 'Renews an external turn’s runner lease; with waitMs a long poll answered at once when the turn ends (a cancel).', request: RenewLeaseCommand, reply: r.runnerLease },
    { id: 'runnerApproval', subject: p.runnerApproval(TURN), summary: 'An external turn’s runner waits for the decision on a tool call that asked for approval.', request: AwaitApprovalCommand, reply: r.runnerApproval },
    { id: 'runnerLive', subject: p.runnerLive(TURN), summary: 'An external turn’s runner publishes live output (ModelDelta, ToolProgress) to the conversation’s live subject.', request: PublishLiveCommand, reply: r.runnerLive },
    { id: 'runnerInterrupted', subject: p.runnerInterrupted(TURN), summary: 'An external turn’s runner reports the step it stopped for an urgent steer (ModelInterrupted, or its calls interrupted); the steers are delivered at boundary interrupt.', request: ReportInterruptedCommand, reply: r.runnerInterrupted },
    { id: 'queryConversation', subject: p.queryConversation, summary: 'The conversation read model: transcript, turns, steers.', request: ConversationQuery, reply: r.queryConversation, queue: p.persistenceQueue },
    { id: 'queryConversations', subject: p.queryConversations, summary: 'The tenant’s conversations, newest first, a page at a time (keyset cursor).', request: ConversationsQuery, reply: r.queryConversations, queue: p.persistenceQueue },
    { id: 'queryTurn', subject: p.queryTurn, summary: 'One turn’s read model.', request: TurnQuery, reply: r.queryTurn, queue: p.persistenceQueue },
    { id: 'querySteer', subject: p.querySteer, summary: 'One steer’s receipt.', request: SteerQuery, reply: r.querySteer, queue: p.persistenceQueue },
    { id: 'queryHealth', subject: p.queryHealth, summary: 'The projector’s checkpoint and lag.', request: z.object({}), reply: r.queryHealth, queue: p.persistenceQueue },
    { id: 'queryTools', subject: p.queryTools, summary: 'The tools a tenant’s turns are offered now: name, description, JSON Schema, source, approval.', request: ToolsQuery, reply: r.queryTools, queue: p.engineQueue },
    { id: 'queryModels', subject: p.queryModels, summary: 'The model providers and named endpoints configured (never a key).', request: ModelsQuery, reply: r.queryModels, queue: p.engineQueue },
  ];
}

function sameAsSpecs(requests: RequestSpec[]): SameAsSpec[] {
  const of = (id: string) => requests.find((r) => r.id === id)!;
  return [
    {
      id: 'queryConversationAt',
      subject: p.queryConversationAt('__instance__'),
      summary: 'The same query, answered by one persistence instance (the one its previous page named in Steerline-Page-At), which reads the next page ahead.',
      sameAs: of('queryConversation'),
    },
  ];
}

const capital = (id: string) => id[0].toUpperCase() + id.slice(1);
const ref = (path: string) => ({ $ref: `#/${path}` });
const PARAMETERS: Record<string, { description: string; default?: string }> = {
  prefix: { description: 'The deployment’s STEERLINE_PREFIX.', default: 'steerline' },
  tenantId: { description: 'The tenant (a subject token).' },
  conversationId: { description: 'The conversation id (UUIDv7).' },
  turnId: { description: 'The turn id (UUIDv7).' },
  instance: { description: 'A persistence instance’s own token (16 hex digits), as a page’s Steerline-Page-At header names it.' },
};

function channelParameters(address: string) {
  const names = [...address.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  return Object.fromEntries(names.map((n) => [n, PARAMETERS[n]]));
}

/** A schema as embedded in the document: no `$schema`/`$id`, which only a standalone file needs. */
function embedded({ $schema: _s, $id: _i, ...schema }: JsonSchema): JsonSchema {
  return schema;
}

/** Request bodies are validated strictly by their responders: keep them closed. */
function requestJsonSchema(schema: z.ZodType): JsonSchema {
  return embedded(z.toJSONSchema(schema, { target: 'draft-07', io: 'input', unrepresentable: 'any' }) as JsonSchema);
}

function eventHeaders(type: EventType): JsonSchema {
  const steer = isSteerEventType(type);
  return {
    type: 'object',
    properties: {
      [EVENT_TYPE_HEADER]: { type: 'string', const: type, description: 'Route or skip without parsing the body.' },
      [PubHeaders.MsgIdHdr]: { type: 'string', description: 'The event id: a retried append is deduplicated by the stream.' },
      [PubHeaders.ExpectedLastSubjectSequenceHdr]: { type: 'string', description: 'Optimistic concurrency on the conversation subject.' },
      ...(steer && { [STEER_ID_HEADER]: { type: 'string', description: 'The steer id.' } }),
    },
    required: [EVENT_TYPE_HEADER, PubHeaders.MsgIdHdr, ...(steer ? [STEER_ID_HEADER] : [])],
  };
}

export function asyncApiDocument(): Record<string, unknown> {
  const requests = requestSpecs();
  const eventsAddress = placeholders(p.conversationEvents('__tenantId__', CONVERSATION));
  const schemas: Record<string, JsonSchema> = {};
  const messages: Record<string, unknown> = {};

  for (const type of EVENT_TYPES) {
    const name = `${type}.v${CURRENT_VERSIONS[type]}`;
    schemas[name] = embedded(eventJsonSchema(type));
    messages[type] = {
      name: type,
      title: `${type} (v${CURRENT_VERSIONS[type]})`,
      summary: EVENT_SUMMARIES[type],
      contentType: 'application/json',
      headers: eventHeaders(type),
      payload: ref(`components/schemas/${name}`),
      'x-steerline-version': CURRENT_VERSIONS[type],
    };
  }
  for (const spec of requests) {
    const name = capital(spec.id);
    schemas[`${name}Request`] = requestJsonSchema(spec.request);
    schemas[`${name}Reply`] = embedded(readerJsonSchema(replySchema(spec.reply)));
    messages[`${name}Request`] = { name: `${name}Request`, summary: spec.summary, contentType: 'application/json', payload: ref(`components/schemas/${name}Request`) };
    messages[`${name}Reply`] = {
      name: `${name}Reply`,
      summary: `The answer to ${spec.id}: {ok: true, data} or {ok: false, error: {code, message}}.`,
      contentType: 'application/json',
      payload: ref(`components/schemas/${name}Reply`),
    };
  }

  const live: Array<[string, z.ZodType, string]> = [
    ['ModelDelta', ModelDeltaSchema, 'A piece of a model answer as it is written; a step’s pieces joined (by index) are the text its ModelResponded records.'],
    ['ToolProgress', ToolProgressSchema, 'How a running tool call is going: progress 0..1 and/or a message.'],
  ];
  for (const [type, schema, summary] of live) {
    schemas[type] = embedded(readerJsonSchema(schema));
    messages[type] = { name: type, summary, contentType: 'application/json', payload: ref(`components/schemas/${type}`) };
  }
  const liveAddress = placeholders(p.conversationLive('__tenantId__', CONVERSATION));
  const storedAddress = placeholders(p.conversationStored('__tenantId__', CONVERSATION));

  const stream = JSON.parse(placeholders(JSON.stringify(streamConfig(p))));
  const consumer = JSON.parse(placeholders(JSON.stringify(eventConsumerConfig(p, '{durable}'))));
  const channels: Record<string, unknown> = {
    conversationEvents: {
      address: eventsAddress,
      title: 'The events of one conversation (the aggregate)',
      description:
        'Every fact, appended by the engine to the JetStream stream. One subject per conversation, so appends are guarded with ' +
        'Nats-Expected-Last-Subject-Sequence. With STEERLINE_SUBJECT_PARTITIONS=n > 1 the engine appends to the same address plus a ' +
        'partition token, `.{p}` with p = fnv1a32(conversationId) mod n; events written before stay where they are, so readers accept ' +
        'both forms. Envelope: {id, type, version, tenantId, conversationId, turnId, seq, at, data}. ' +
        'Readers tolerate unknown fields and upcast older versions (the consumer kit does both).',
      parameters: channelParameters(eventsAddress),
      messages: Object.fromEntries(EVENT_TYPES.map((t) => [t, ref(`components/messages/${t}`)])),
      'x-steerline-stream': { ...stream, description: 'ensureStream() creates it when missing; num_replicas is the deployment’s (3 on a cluster).' },
      'x-steerline-consumer': { ...consumer, description: 'The durable pull consumer consumeEvents() creates: in order, ack after the callback.' },
    },
    conversationStored: {
      address: storedAddress,
      title: 'The events of one conversation, republished once stored',
      description:
        'The stream republishes every stored event here (its republish rule) with headers Nats-Sequence (its stream sequence) and ' +
        'Nats-Last-Sequence (the previous sequence on the same conversation subject); an event appended with a partition token comes ' +
        'on this address plus `.{p}`. Gateways follow a conversation here (both forms); a publish ' +
        'the stream refused never appears.',
      parameters: channelParameters(storedAddress),
      messages: Object.fromEntries(EVENT_TYPES.map((t) => [t, ref(`components/messages/${t}`)])),
    },
    conversationLive: {
      address: liveAddress,
      title: 'Live output of one conversation (core NATS, never stored)',
      description: 'What a running turn is doing right now. Not facts: missed messages are not replayed; the events carry the whole text and results.',
      parameters: channelParameters(liveAddress),
      messages: Object.fromEntries(live.map(([t]) => [t, ref(`components/messages/${t}`)])),
    },
    inbox: {
      address: null,
      title: 'The requester’s reply inbox',
      description: 'NATS request/reply: the answer goes to the request’s reply subject.',
      messages: Object.fromEntries(requests.map((r) => [`${capital(r.id)}Reply`, ref(`components/messages/${capital(r.id)}Reply`)])),
    },
  };
  const operations: Record<string, unknown> = {
    appendEvents: {
      action: 'send',
      title: 'The engine appends events',
      description: 'The engine, owner of a turn, appends each fact of it to the conversation subject, guarded by the subject sequence it last saw.',
      tags: [{ name: 'events' }],
      channel: ref('channels/conversationEvents'),
      messages: EVENT_TYPES.map((t) => ref(`channels/conversationEvents/messages/${t}`)),
    },
    consumeEvents: {
      action: 'receive',
      title: 'Consumers follow the log with a durable pull consumer',
      description: 'The projector and other readers consume the events in order and ack each after handling it; a redelivered event is a duplicate to skip by seq.',
      tags: [{ name: 'events' }],
      channel: ref('channels/conversationEvents'),
      messages: EVENT_TYPES.map((t) => ref(`channels/conversationEvents/messages/${t}`)),
    },
  };
  operations.publishLive = {
    action: 'send',
    title: 'The engine publishes live output while a turn runs',
    description: 'ModelDelta while a model answer is written and ToolProgress while a tool works, on core NATS: never stored, missed messages are not replayed.',
    tags: [{ name: 'events' }],
    channel: ref('channels/conversationLive'),
    messages: live.map(([t]) => ref(`channels/conversationLive/messages/${t}`)),
  };
  operations.followStored = {
    action: 'receive',
    title: 'Gateways follow the conversations their clients watch',
    description: 'Each stored event, republished by the stream with its stream sequence and the previous sequence of its conversation, so a watcher follows the log exactly without a consumer of its own.',
    tags: [{ name: 'events' }],
    channel: ref('channels/conversationStored'),
    messages: EVENT_TYPES.map((t) => ref(`channels/conversationStored/messages/${t}`)),
  };
  for (const spec of [...requests, ...sameAsSpecs(requests)]) {
    // Answered with another request's messages, by one responder (no queue group).
    const own = 'sameAs' in spec ? spec.sameAs : spec;
    const queue = 'sameAs' in spec ? undefined : spec.queue;
    const name = capital(own.id);
    const address = placeholders(spec.subject);
    channels[spec.id] = { address, parameters: channelParameters(address), messages: { [`${name}Request`]: ref(`components/messages/${name}Request`) } };
    operations[spec.id] = {
      action: 'receive',
      summary: spec.summary,
      description: `${spec.summary} The reply goes to the requester’s inbox; a request with no responder fails at once.`,
      tags: [{ name: own.queue === p.persistenceQueue ? 'queries' : 'commands' }],
      channel: ref(`channels/${spec.id}`),
      messages: [ref(`channels/${spec.id}/messages/${name}Request`)],
      reply: { channel: ref('channels/inbox'), messages: [ref(`channels/inbox/messages/${name}Reply`)] },
      ...(queue && { bindings: { nats: { queue: placeholders(queue), bindingVersion: '0.1.0' } } }),
    };
  }

  return {
    asyncapi: ASYNCAPI_VERSION,
    info: {
      title: 'Steerline',
      version: ASYNCAPI_DOC_VERSION,
      contact: { name: 'Steerline maintainers' },
      license: { name: 'UNLICENSED (private)' },
      tags: TAGS,
      description:
        'Redirect an AI agent while it works. Events on NATS JetStream and request/reply commands over NATS. ' +
        'Generated from libs/contracts by `npm run contracts:generate`; do not edit by hand.',
    },
    defaultContentType: 'application/json',
    servers: { nats: { host: 'localhost:4222', protocol: 'nats', description: 'NATS with JetStream (in production a cluster; see deploy/nats).' } },
    channels,
    operations,
    components: { schemas, messages },
  };
}

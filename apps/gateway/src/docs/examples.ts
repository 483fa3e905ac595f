import { BODY_MAX_BYTES, HTTP_STATUS, messagesOf, type ErrorCode, type Receipt, type SteerlineEvent } from '@steerline/contracts';
// The contract's golden fixtures, imported (not read from disk) so the build
// ships them with the gateway: the examples show the shapes the log really holds.
import conversationCreated from '../../../../libs/contracts/src/fixtures/ConversationCreated.v1.json';
import modelResponded from '../../../../libs/contracts/src/fixtures/ModelResponded.v1.json';
import steerDropped from '../../../../libs/contracts/src/fixtures/SteerDropped.v1.json';
import steerQueued from '../../../../libs/contracts/src/fixtures/SteerQueued.v1.json';
import steeringDelivered from '../../../../libs/contracts/src/fixtures/SteeringDelivered.v1.json';
import toolCallFinished from '../../../../libs/contracts/src/fixtures/ToolCallFinished.v1.json';
import turnCancelled from '../../../../libs/contracts/src/fixtures/TurnCancelled.v1.json';
import turnCompleted from '../../../../libs/contracts/src/fixtures/TurnCompleted.v1.json';
import turnStarted from '../../../../libs/contracts/src/fixtures/TurnStarted.v1.json';
import { AGENT_EXAMPLES } from './agent-examples';

/**
 * An example of each request body and each answer in the OpenAPI document,
 * built from the golden fixtures. Keyed by operationId (see operations.ts);
 * error answers get one example per error code their description names.
 * The contract gate validates every example against its schema.
 */
export interface OperationExamples {
  request?: unknown;
  /** By status; a status with several answers (a media type's `examples`) maps names to values. */
  responses: Record<number, unknown>;
}

const turnId = turnStarted.turnId;
const conversationId = conversationCreated.conversationId;

const queued: Receipt = { steerId: steerQueued.data.steerId, turnId, status: 'queued', position: steerQueued.data.position, text: steerQueued.data.text };
const d = steeringDelivered.data;
const delivered: Receipt = { ...queued, status: 'delivered', step: d.step, boundary: d.boundary as Receipt['boundary'], requestStep: d.requestStep };
const dropped: Receipt = {
  steerId: steerDropped.data.steerId,
  turnId,
  status: 'dropped',
  position: steerDropped.data.position,
  text: steerDropped.data.text,
  reason: steerDropped.data.reason as Receipt['reason'],
};

const turnView = {
  id: turnId,
  conversationId,
  status: 'completed',
  steps: turnCompleted.data.steps,
  prompt: turnStarted.data.prompt,
  model: turnStarted.data.model,
  limits: turnStarted.data.limits,
  text: turnCompleted.data.text,
  startedAt: turnStarted.at,
  endedAt: turnCompleted.at,
  steers: { queued: 0, delivered: 1, dropped: 1 },
  pendingApprovals: [],
};

const transcriptEvents = [turnStarted, steeringDelivered, modelResponded, toolCallFinished, turnCompleted] as unknown as SteerlineEvent[];
const conversationView = {
  id: conversationId,
  createdAt: conversationCreated.at,
  turns: [turnView],
  messages: transcriptEvents.flatMap((e) => messagesOf(e)),
  steers: [
    { id: delivered.steerId, turnId, text: delivered.text, position: delivered.position, status: 'delivered', step: d.step, boundary: d.boundary, requestStep: d.requestStep, queuedAt: steerQueued.at, settledAt: steeringDelivered.at },
    { id: dropped.steerId, turnId, text: dropped.text, position: dropped.position, status: 'dropped', reason: dropped.reason, queuedAt: steerQueued.at, settledAt: steerDropped.at },
  ],
};

/** Path parameters by name: the fixtures' ids. */
export const PATH_EXAMPLES: Record<string, string> = { tid: turnId, cid: conversationId, sid: queued.steerId };

const sse = `id: ${steerQueued.seq}\nevent: SteerQueued\ndata: ${JSON.stringify(steerQueued)}\n\n`;

/** One example error body per code: the details some codes carry are part of the contract. */
export const ERROR_EXAMPLES: Record<ErrorCode, Record<string, unknown>> = {
  invalid_request: { code: 'invalid_request', message: 'tid must be a UUID' },
  unauthorized: { code: 'unauthorized', message: 'the API key is not valid' },
  not_lease_holder: { code: 'not_lease_holder', message: `the runner lease of turn ${turnId} is not this one (another runner holds it, or it lapsed)`, turnId },
  not_found: { code: 'not_found', message: `turn ${turnId} not found`, turnId },
  turn_not_running: { code: 'turn_not_running', message: `turn ${turnId} is not running` },
  turn_already_running: { code: 'turn_already_running', message: `turn ${turnId} of this conversation is running`, turnId },
  turn_moved_on: { code: 'turn_moved_on', message: `the running turn is ${turnId}`, turnId },
  queue_full: { code: 'queue_full', message: `${turnStarted.data.limits.maxQueued} steers already wait for the next boundary`, maxQueued: turnStarted.data.limits.maxQueued },
  already_delivered: { code: 'already_delivered', message: 'the model already has this steer', steerId: delivered.steerId, step: d.step },
  steer_dropped: {
    code: 'steer_dropped',
    message: `the steer was dropped: ${dropped.reason}`,
    reason: dropped.reason,
    steerId: dropped.steerId,
    turnId,
    position: dropped.position,
    text: dropped.text,
  },
  already_decided: { code: 'already_decided', message: 'tool call call_1_0 was already approved', toolCallId: 'call_1_0', decision: 'approved', by: 'user' },
  already_exists: { code: 'already_exists', message: 'agent reviewer already exists: PUT /v1/agents/reviewer makes its next version', agent: 'reviewer' },
  turn_queue_full: { code: 'turn_queue_full', message: '10 turns already wait in this conversation', maxQueuedTurns: 10 },
  rate_limited: { code: 'rate_limited', message: 'too many requests: at most 100/s (burst 200) per API key', retryAfterSeconds: 1 },
  payload_too_large: { code: 'payload_too_large', message: `the request body is larger than ${BODY_MAX_BYTES} bytes` },
  unavailable: { code: 'unavailable', message: 'no answer in time; the steer may have been accepted: resubmit it with the same steerId', steerId: queued.steerId },
  internal: { code: 'internal', message: 'internal error' },
};

/**
 * The error codes an error answer's description names (`'queue_full; rate_limited (Retry-After)'`),
 * in that order (the first is the one the reference shows first), or, when it names none, every code of that status.
 */
export function errorCodesOf(status: number, description: string): ErrorCode[] {
  const ofStatus = (Object.keys(HTTP_STATUS) as ErrorCode[]).filter((c) => HTTP_STATUS[c] === status);
  const at = (c: ErrorCode) => description.search(new RegExp(`\\b${c}\\b`));
  const named = ofStatus.filter((c) => at(c) >= 0).sort((a, b) => at(a) - at(b));
  return named.length ? named : ofStatus;
}

const receipts = { 200: delivered, 202: queued };
/** A runner lease token, as a start of an external turn answers it. */
const lease = 'kq3LxY2c0m9VbQeRrT5uWzA1nH8sJ4dF6gK7pL0oM2i';
const steerBody = { text: steerQueued.data.text, steerId: steerQueued.data.steerId };

export const EXAMPLES: Record<string, OperationExamples> = {
  steerTurn: { request: steerBody, responses: receipts },
  steerConversation: { request: { ...steerBody, expectedTurnId: turnId }, responses: receipts },
  getSteerReceipt: { responses: receipts },
  withdrawSteer: { responses: { 200: dropped } },
  editSteer: { request: { text: 'Keep the public API unchanged, and say so' }, responses: { 200: { ...queued, text: 'Keep the public API unchanged, and say so' } } },
  decideToolApproval: { request: { decision: 'approve', reason: 'fine' }, responses: { 200: { toolCallId: 'call_1_0', decision: 'approved', reason: 'fine', by: 'user' } } },
  startTurn: { request: { prompt: turnStarted.data.prompt, agent: 'reviewer@3', settings: { temperature: 0.2 }, limits: turnStarted.data.limits }, responses: { 202: { turnId, status: 'running' } } },
  getTurn: { responses: { 200: turnView } },
  reportRunnerAnswer: {
    request: { lease, step: 1, text: '', toolCalls: [{ id: 'call_1_0', name: 'sleep', args: { ms: 200 } }], usage: { inputTokens: 120, outputTokens: 14 } },
    responses: { 200: { next: 'tools', step: 1, calls: [{ toolCallId: 'call_1_0', name: 'sleep', approval: 'none', finished: false }] } },
  },
  reportRunnerResults: {
    request: { lease, step: 1, results: [{ toolCallId: 'call_1_0', ok: true, output: 'slept 200 ms', durationMs: 201 }] },
    responses: { 200: { next: 'model', step: 2, steers: [{ steerId: delivered.steerId, text: delivered.text, rendered: d.rendered, position: delivered.position }] } },
  },
  reportRunnerInterrupted: {
    request: { lease, step: 1, results: [] },
    responses: {
      200: {
        next: 'model',
        step: 2,
        steers: [{ steerId: delivered.steerId, text: delivered.text, rendered: d.rendered, position: delivered.position }],
        cut: { step: 1, results: [{ toolCallId: 'call_1_0', name: 'sleep', ok: false, error: { code: 'interrupted', message: 'the call was interrupted by a steer; it may or may not have taken effect' } }] },
      },
    },
  },
  reportRunnerFailure: {
    request: { lease, code: 'agent_error', message: 'the agent threw: TypeError: x is undefined' },
    responses: { 200: { next: 'end', status: 'failed', error: { code: 'agent_error', message: 'the agent threw: TypeError: x is undefined' } } },
  },
  renewRunnerLease: { request: { lease, waitMs: 5000 }, responses: { 200: { leaseMs: 15000, turn: { next: 'end', status: 'cancelled', reason: turnCancelled.data.reason } } } },
  awaitRunnerApproval: { request: { lease, waitMs: 5000 }, responses: { 200: { toolCallId: 'call_1_0', decision: 'approved', by: 'user' } } },
  publishRunnerLive: { request: { lease, messages: [{ type: 'ModelDelta', step: 2, text: 'The answer' }, { type: 'ToolProgress', step: 1, toolCallId: 'call_1_0', progress: 0.5 }] }, responses: { 200: { published: 2 } } },
  cancelTurn: { request: { reason: turnCancelled.data.reason }, responses: { 202: { accepted: true } } },
  createConversation: { request: {}, responses: { 201: { id: conversationId } } },
  getConversation: { responses: { 200: conversationView } },
  listConversations: {
    responses: {
      200: {
        conversations: [
          {
            id: conversationId,
            createdAt: turnStarted.at,
            messageCount: conversationView.messages.length,
            lastTurn: { id: turnId, status: 'completed', prompt: turnStarted.data.prompt, startedAt: turnStarted.at },
          },
        ],
        next: `1796112000000000_${conversationId}`,
      },
    },
  },
  streamConversationEvents: { responses: { 200: sse } },
  getHealth: { responses: { 200: { status: 'ok' } } },
  getReadiness: { responses: { 200: { status: 'ready', checks: { nats: 'ok', stream: 'ok', database: 'ok' } } } },
  getMetrics: { responses: { 200: '# TYPE steerline_http_requests_total counter\nsteerline_http_requests_total{route="/v1/turns/:tid/steers",status="202"} 1\n' } },
  getReference: { responses: { 200: '<!doctype html><html lang="en"><head><title>Steerline API</title></head>…</html>' } },
  getOpenApiDocument: { responses: { 200: { openapi: '3.1.0', info: { title: 'Steerline', version: '1' }, paths: {} } } },
  getReferenceAsset: { responses: { 200: '/* swagger-ui.css */' } },
  ...AGENT_EXAMPLES,
};

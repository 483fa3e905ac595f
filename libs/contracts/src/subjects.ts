/**
 * Every subject and the stream name, built from the deployment's prefix
 * (STEERLINE_PREFIX). Event subjects and command subjects never overlap, so a
 * stream never captures a request and answers it with its ack.
 */
import { RUNNER_VERBS } from './runner';

export const DEFAULT_PREFIX = 'steerline';

const TOKEN = /^[A-Za-z0-9_-]+$/;

function token(value: string, what: string): string {
  if (!TOKEN.test(value)) throw new Error(`${what} is not a valid subject token: ${JSON.stringify(value)}`);
  return value;
}

export function subjects(prefix: string = DEFAULT_PREFIX) {
  token(prefix, 'prefix');
  return {
    prefix,
    stream: `${prefix.toUpperCase()}_EVENTS`,
    /** All events: the stream's subjects. */
    events: `${prefix}.evt.>`,
    /** One conversation's events: the aggregate, guarded by expected last subject sequence. */
    conversationEvents: (tenantId: string, conversationId: string) =>
      `${prefix}.evt.${token(tenantId, 'tenantId')}.${token(conversationId, 'conversationId')}`,
    /**
     * Every stored event, republished by the stream itself once it is stored,
     * with headers `Nats-Sequence` (its stream sequence) and `Nats-Last-Sequence`
     * (the previous sequence on the same conversation subject, 0 for none). A
     * gateway follows a conversation here: a publish the stream refused (a
     * stale writer, a deduplicated retry) reaches `evt` subscribers but never this.
     */
    stored: `${prefix}.stored.>`,
    conversationStored: (tenantId: string, conversationId: string) =>
      `${prefix}.stored.${token(tenantId, 'tenantId')}.${token(conversationId, 'conversationId')}`,
    /** Every stored event of one tenant, republished: a gateway waits here for a steer of a turn whose conversation it does not know yet. */
    tenantStored: (tenantId: string) => `${prefix}.stored.${token(tenantId, 'tenantId')}.*`,
    /** One tenant's event subjects, for a stream made before the republish rule. */
    tenantEvents: (tenantId: string) => `${prefix}.evt.${token(tenantId, 'tenantId')}.*`,
    /** Live output (core NATS only, never stored): ModelDelta and ToolProgress of a conversation's running turn. */
    conversationLive: (tenantId: string, conversationId: string) =>
      `${prefix}.live.${token(tenantId, 'tenantId')}.${token(conversationId, 'conversationId')}`,
    createConversation: `${prefix}.cmd.conversation.create`,
    startTurn: `${prefix}.cmd.turn.start`,
    turnSteer: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.steer`,
    conversationQueue: (conversationId: string) => `${prefix}.cmd.conv.${token(conversationId, 'conversationId')}.queue`,
    conversationSteer: (conversationId: string) => `${prefix}.cmd.conv.${token(conversationId, 'conversationId')}.steer`,
    withdraw: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.withdraw`,
    cancel: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.cancel`,
    editSteer: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.edit`,
    decideApproval: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.approval`,
    /** An external turn's runner reports (docs/runner-protocol.md), answered by the turn's owner like its steers. */
    runnerAnswer: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.${RUNNER_VERBS.answer}`,
    runnerResults: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.${RUNNER_VERBS.results}`,
    runnerFail: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.${RUNNER_VERBS.fail}`,
    runnerLease: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.${RUNNER_VERBS.lease}`,
    runnerApproval: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.${RUNNER_VERBS.approval}`,
    runnerLive: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.${RUNNER_VERBS.live}`,
    runnerInterrupted: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.${RUNNER_VERBS.interrupted}`,
    /** Everything a turn's owner answers; one wildcard subscription per running turn. */
    turnCommands: (turnId: string) => `${prefix}.cmd.turn.${token(turnId, 'turnId')}.*`,
    /** What the owner of a conversation's running turn answers (steer, queue); one wildcard subscription per running turn. */
    conversationCommands: (conversationId: string) => `${prefix}.cmd.conv.${token(conversationId, 'conversationId')}.*`,
    queryConversation: `${prefix}.qry.conversation`,
    /** The tenant's conversations, newest first, paged. */
    queryConversations: `${prefix}.qry.conversations`,
    queryTurn: `${prefix}.qry.turn`,
    querySteer: `${prefix}.qry.steer`,
    queryHealth: `${prefix}.qry.health`,
    /** Answered by engines (engine queue group): the tenant's tools and the configured model endpoints (docs/design.md §4). */
    queryTools: `${prefix}.qry.tools`,
    queryModels: `${prefix}.qry.models`,
    /** Queue groups: one member of each answers a request. */
    engineQueue: `${prefix}-engine`,
    persistenceQueue: `${prefix}-persistence`,
    projectorConsumer: `${prefix}-projector`,
    /** KV buckets: which engine owns which running turn, and which engines are alive. */
    turnsBucket: `${prefix}_turns`,
    enginesBucket: `${prefix}_engines`,
    /** KV bucket: every gateway's shared token bucket per API key (rate limits across gateways). */
    rateLimitsBucket: `${prefix}_ratelimits`,
    /** KV bucket: every tenant's agent versions, one create-only key per version (docs/design.md §6.1). */
    agentsBucket: `${prefix}_agents`,
  };
}
export type Subjects = ReturnType<typeof subjects>;

/** Splits an event subject back into its tenant and conversation. */
export function parseEventSubject(subject: string): { prefix: string; tenantId: string; conversationId: string } | undefined {
  const parts = subject.split('.');
  if (parts.length !== 4 || parts[1] !== 'evt') return undefined;
  return { prefix: parts[0], tenantId: parts[2], conversationId: parts[3] };
}

/** Headers on every event message, so consumers can route without parsing. */
export const EVENT_TYPE_HEADER = 'Steerline-Event-Type';
export const STEER_ID_HEADER = 'Steerline-Steer-Id';

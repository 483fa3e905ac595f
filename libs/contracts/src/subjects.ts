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

/** The most subject partitions a deployment may have (STEERLINE_SUBJECT_PARTITIONS), as many as projector partitions. */
export const MAX_SUBJECT_PARTITIONS = 64;

/** FNV-1a, 32 bits: stable across processes, releases and platforms. */
export function stableHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The partition token of a conversation's event subject when the log has `count` subject partitions. */
export function subjectPartitionOf(conversationId: string, count: number): number {
  return count <= 1 ? 0 : stableHash(conversationId) % count;
}

export interface SubjectOptions {
  /**
   * How many partition tokens the event subjects the engine writes carry
   * (STEERLINE_SUBJECT_PARTITIONS, docs/design.md §15 "Partitioned projection").
   * 1 (the default) writes `<prefix>.evt.<tenant>.<conversation>` as before
   * partitions; n > 1 writes `<prefix>.evt.<tenant>.<conversation>.<p>`, p =
   * fnv1a32(conversation) mod n. Readers accept both forms whatever this says.
   */
  subjectPartitions?: number;
}

/** A conversation's subjects: every one its events can be on, and the one they are appended to now. */
export interface ConversationLog {
  write: string;
  read: readonly string[];
}

export function subjects(prefix: string = DEFAULT_PREFIX, opts: SubjectOptions = {}) {
  token(prefix, 'prefix');
  const subjectPartitions = opts.subjectPartitions ?? 1;
  if (!Number.isInteger(subjectPartitions) || subjectPartitions < 1 || subjectPartitions > MAX_SUBJECT_PARTITIONS) {
    throw new Error(`subjectPartitions must be an integer from 1 to ${MAX_SUBJECT_PARTITIONS}: ${subjectPartitions}`);
  }
  const unpartitioned = (tenantId: string, conversationId: string) => `${prefix}.evt.${token(tenantId, 'tenantId')}.${token(conversationId, 'conversationId')}`;
  const written = (tenantId: string, conversationId: string) =>
    subjectPartitions <= 1 ? unpartitioned(tenantId, conversationId) : `${unpartitioned(tenantId, conversationId)}.${subjectPartitionOf(conversationId, subjectPartitions)}`;
  // Exact subjects only: a wildcard `next_by_subj` or `last_by_subj` makes the server walk the stream.
  const read = (tenantId: string, conversationId: string): string[] =>
    subjectPartitions <= 1 ? [unpartitioned(tenantId, conversationId)] : [unpartitioned(tenantId, conversationId), written(tenantId, conversationId)];
  return {
    prefix,
    stream: `${prefix.toUpperCase()}_EVENTS`,
    subjectPartitions,
    /** All events: the stream's subjects. */
    events: `${prefix}.evt.>`,
    /**
     * The subject a conversation's events are appended to now: the aggregate,
     * guarded by expected last subject sequence. One conversation, one subject
     * (as long as the deployment's subject partitions stay as they are).
     */
    conversationEvents: written,
    /**
     * The subjects a conversation's events are on: the unpartitioned one (all of
     * them before subject partitions), and with subject partitions the one they are
     * appended to now. Readers of a conversation read both and merge them by stream
     * sequence. Exact subjects, so each read is a lookup, not a walk of the stream.
     */
    conversationEventSubjects: read,
    /**
     * Both forms with any partition token (a wildcard): for a walk of the log that
     * does not know the deployment's subject partitions (`npm run audit`).
     */
    conversationEventForms: (tenantId: string, conversationId: string) => [unpartitioned(tenantId, conversationId), `${unpartitioned(tenantId, conversationId)}.*`],
    /** Where a conversation's events are read from (`read`, conversationEventSubjects) and where they are appended now (`write`). */
    conversationLog: (tenantId: string, conversationId: string): ConversationLog => ({ write: written(tenantId, conversationId), read: read(tenantId, conversationId) }),
    /** Subject partition `index`'s events: what that projector partition's durable consumer filters. */
    partitionEvents: (index: number) => `${prefix}.evt.*.*.${index}`,
    /** Every event written without a partition token (before subject partitions, or with 1). */
    unpartitionedEvents: `${prefix}.evt.*.*`,
    /**
     * Every stored event, republished by the stream itself once it is stored,
     * with headers `Nats-Sequence` (its stream sequence) and `Nats-Last-Sequence`
     * (the previous sequence on the same conversation subject, 0 for none). A
     * gateway follows a conversation here: a publish the stream refused (a
     * stale writer, a deduplicated retry) reaches `evt` subscribers but never this.
     */
    stored: `${prefix}.stored.>`,
    /** A conversation's stored events, republished, from its unpartitioned subject. */
    conversationStored: (tenantId: string, conversationId: string) => `${prefix}.stored.${token(tenantId, 'tenantId')}.${token(conversationId, 'conversationId')}`,
    /** Where a conversation's stored events are republished, one per subject of conversationEventSubjects: a follower subscribes each. */
    conversationStoredSubjects: (tenantId: string, conversationId: string): string[] => read(tenantId, conversationId).map((subject) => subject.replace(`${prefix}.evt.`, `${prefix}.stored.`)),
    /**
     * Every stored event of one tenant, republished, in both subject forms: a
     * gateway waits here for a steer of a turn whose conversation it does not
     * know yet.
     */
    tenantStored: (tenantId: string) => `${prefix}.stored.${token(tenantId, 'tenantId')}.>`,
    /** One tenant's event subjects (both forms), for a stream made before the republish rule. */
    tenantEvents: (tenantId: string) => `${prefix}.evt.${token(tenantId, 'tenantId')}.>`,
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
    /**
     * One persistence instance's own `qry.conversation` (no queue group), named in its pages'
     * CONVERSATION_PAGE_AT_HEADER: a read's next page is asked there, of the instance that read it ahead.
     */
    queryConversationAt: (instance: string) => `${prefix}.qry.conversation.at.${token(instance, 'instance')}`,
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

export interface EventSubject {
  prefix: string;
  tenantId: string;
  conversationId: string;
  /** The subject's partition token; absent on a subject written without one. */
  partition?: number;
}

const PARTITION_TOKEN = /^(0|[1-9][0-9]?)$/;

/**
 * Splits an event subject back into its tenant, conversation and (when it has
 * one) partition token. Both forms parse: `<prefix>.evt.<tenant>.<conversation>`
 * and `<prefix>.evt.<tenant>.<conversation>.<p>`; anything else is undefined.
 */
export function parseEventSubject(subject: string): EventSubject | undefined {
  const parts = subject.split('.');
  if (parts[1] !== 'evt' || parts.slice(2).some((p) => p === '')) return undefined;
  if (parts.length === 4) return { prefix: parts[0], tenantId: parts[2], conversationId: parts[3] };
  if (parts.length !== 5 || !PARTITION_TOKEN.test(parts[4]) || Number(parts[4]) >= MAX_SUBJECT_PARTITIONS) return undefined;
  return { prefix: parts[0], tenantId: parts[2], conversationId: parts[3], partition: Number(parts[4]) };
}

/** Headers on every event message, so consumers can route without parsing. */
export const EVENT_TYPE_HEADER = 'Steerline-Event-Type';
export const STEER_ID_HEADER = 'Steerline-Steer-Id';

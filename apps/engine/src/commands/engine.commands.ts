import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  CancelTurnCommand,
  CreateConversationCommand,
  EVENT_VERSION,
  StartTurnCommand,
  SteerlineError,
  parseBody,
  uuidv7,
  type StartTurnAnswer,
  type SteerlineEventOf,
  type Subjects,
} from '@steerline/contracts';
import { jetstreamManager, lastMessageOf, request, serve } from '@steerline/runtime';
import { Logger } from '@nestjs/common';
import { StaleWriterError, type EventLog } from '../log/event-log';
import type { TurnRegistry } from '../turn/turn.registry';
import { AgentResolution } from './agent-resolution';
import type { StartModel, StartTurnWithModel } from './start-model';

const logger = new Logger('EngineCommands');
export const onError = (err: unknown, context: { subject: string }) =>
  logger.error({ message: 'command failed or its reply could not be sent', subject: context.subject, error: (err as Error)?.message, code: (err as { code?: string })?.code });

/**
 * The engine's queue-group subjects: any instance may answer. `withModel` gives a start the model it runs with, after its agent
 * is resolved (an agent's model wins over the default); `defaultAgent` (STEERLINE_DEFAULT_MODEL as an agent) is the agent of a start that names neither.
 */
export function serveEngineCommands(nc: NatsConnection, s: Subjects, log: EventLog, turns: TurnRegistry, withModel: StartModel, streamReplicas = 1, defaultAgent?: string): Subscription[] {
  const agents = new AgentResolution(nc, s, streamReplicas, defaultAgent);
  return [
    serve(nc, s.createConversation, (body) => createConversation(parseBody(CreateConversationCommand, body), s, log, nc), { queue: s.engineQueue, onError }),
    serve(nc, s.startTurn, async (body) => startOrQueue(nc, s, turns, withModel(await agents.resolve(parseBody(StartTurnCommand, body)))), { queue: s.engineQueue, onError }),
  ];
}

/**
 * Any engine may take a start. A `whenBusy: "queue"` start of a conversation
 * another engine runs is forwarded to that owner, the only one that may
 * append to the conversation; when the owner has just let go, the start is
 * tried here again.
 */
async function startOrQueue(nc: NatsConnection, s: Subjects, turns: TurnRegistry, command: StartTurnWithModel): Promise<StartTurnAnswer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await turns.start(command);
    } catch (err) {
      const busy = err instanceof SteerlineError && err.code === 'turn_already_running';
      if (!busy || command.whenBusy !== 'queue' || turns.runningIn(command.conversationId) || attempt >= 3) throw err;
    }
    try {
      return await request<StartTurnAnswer>(nc, s.conversationQueue(command.conversationId), command, { timeoutMs: FORWARD_TIMEOUT_MS, noResponders: 'unavailable' });
    } catch (err) {
      if (!(err instanceof SteerlineError && err.code === 'unavailable') || attempt >= 3) throw err;
    }
  }
}

const FORWARD_TIMEOUT_MS = 5000;

/** A queued turn's subjects: its cancel is answered; anything else waits until it runs. */
export function subscribeQueuedTurn(nc: NatsConnection, s: Subjects, turn: { turnId: string; tenantId: string }, cancel: (reason: string) => Promise<void>): Subscription {
  return serve(
    nc,
    s.turnCommands(turn.turnId),
    async (body, msg) => {
      const verb = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
      if (verb !== 'cancel') throw new SteerlineError('turn_not_running', `turn ${turn.turnId} is queued and has not started`);
      const command = parseBody(CancelTurnCommand, body);
      if (command.tenantId !== turn.tenantId) throw new SteerlineError('not_found', `turn ${turn.turnId} not found`);
      await cancel(command.reason ?? 'cancelled by the client');
      return { accepted: true };
    },
    { onError },
  );
}

async function createConversation(command: CreateConversationCommand, s: Subjects, log: EventLog, nc: NatsConnection): Promise<{ id: string }> {
  const id = command.conversationId ?? uuidv7();
  // With subject partitions, an id of a conversation from before them has its events on the
  // unpartitioned subject, which the fence below does not see: asked first (not atomic with it).
  if (command.conversationId && s.subjectPartitions > 1) {
    const existing = await lastMessageOf(await jetstreamManager(nc), s.stream, s.conversationLog(command.tenantId, id).read).catch((err: unknown) => {
      throw new SteerlineError('unavailable', (err as Error).message);
    });
    if (existing) throw new SteerlineError('invalid_request', `conversation ${id} already exists`);
  }
  const event: SteerlineEventOf<'ConversationCreated'> = {
    id: uuidv7(),
    type: 'ConversationCreated',
    version: EVENT_VERSION,
    tenantId: command.tenantId,
    conversationId: id,
    turnId: null,
    seq: 0,
    at: new Date().toISOString(),
    data: {},
  };
  try {
    // Expected last sequence 0: the conversation's subject must be empty, so an id is never reused.
    await log.append(s.conversationEvents(command.tenantId, id), [event], 0);
  } catch (err) {
    if (err instanceof StaleWriterError) throw new SteerlineError('invalid_request', `conversation ${id} already exists`);
    throw new SteerlineError('unavailable', (err as Error).message);
  }
  return { id };
}

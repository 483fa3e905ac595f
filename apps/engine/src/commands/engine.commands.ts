import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  CancelTurnCommand,
  CreateConversationCommand,
  DecideApprovalCommand,
  EditSteerCommand,
  EVENT_VERSION,
  StartTurnCommand,
  SteerlineError,
  SubmitConversationSteerCommand,
  SubmitSteerCommand,
  WithdrawSteerCommand,
  parseBody,
  request,
  serve,
  uuidv7,
  type StartTurnAnswer,
  type SteerlineEventOf,
  type Subjects,
} from '@steerline/contracts';
import { Logger } from '@nestjs/common';
import { StaleWriterError, type EventLog } from '../log/event-log';
import type { TurnRegistry } from '../turn/turn.registry';
import type { TurnRunner } from '../turn/turn.runner';

const logger = new Logger('EngineCommands');
const onError = (err: unknown, context: { subject: string }) =>
  logger.error({ message: 'command failed or its reply could not be sent', subject: context.subject, error: (err as Error)?.message, code: (err as { code?: string })?.code });

/** The engine's queue-group subjects: any instance may answer. */
export function serveEngineCommands(nc: NatsConnection, s: Subjects, log: EventLog, turns: TurnRegistry): Subscription[] {
  return [
    serve(nc, s.createConversation, (body) => createConversation(parseBody(CreateConversationCommand, body), s, log), { queue: s.engineQueue, onError }),
    serve(nc, s.startTurn, (body) => startOrQueue(nc, s, turns, parseBody(StartTurnCommand, body)), { queue: s.engineQueue, onError }),
  ];
}

/**
 * Any engine may take a start. A `whenBusy: "queue"` start of a conversation
 * another engine runs is forwarded to that owner, the only one that may
 * append to the conversation; when the owner has just let go, the start is
 * tried here again.
 */
async function startOrQueue(nc: NatsConnection, s: Subjects, turns: TurnRegistry, command: StartTurnCommand): Promise<StartTurnAnswer> {
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

async function createConversation(command: CreateConversationCommand, s: Subjects, log: EventLog): Promise<{ id: string }> {
  const id = command.conversationId ?? uuidv7();
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

/** The owner's subjects of one running turn: steer, edit, withdraw, approval, cancel, and steers by conversation. */
export function subscribeTurn(nc: NatsConnection, s: Subjects, runner: TurnRunner, turns: TurnRegistry): Subscription[] {
  const owned = (tenantId: string) => {
    // Another tenant's turn does not exist for this caller.
    if (tenantId !== runner.tenantId) throw new SteerlineError('not_found', `turn ${runner.turnId} not found`);
  };
  const onTurnCommand = async (body: unknown, msg: Msg) => {
    const verb = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
    switch (verb) {
      case 'steer': {
        const command = parseBody(SubmitSteerCommand, body);
        owned(command.tenantId);
        return runner.submitSteer(command.steerId ?? uuidv7(), command.text, command);
      }
      case 'edit': {
        const command = parseBody(EditSteerCommand, body);
        owned(command.tenantId);
        return runner.editSteer(command.steerId, command.text);
      }
      case 'withdraw': {
        const command = parseBody(WithdrawSteerCommand, body);
        owned(command.tenantId);
        return runner.withdraw(command.steerId);
      }
      case 'approval': {
        const command = parseBody(DecideApprovalCommand, body);
        owned(command.tenantId);
        return runner.decideApproval(command.toolCallId, command.decision === 'approve' ? 'approved' : 'denied', command.reason);
      }
      case 'cancel': {
        const command = parseBody(CancelTurnCommand, body);
        owned(command.tenantId);
        await runner.cancel(command.reason ?? 'cancelled by the client');
        return { accepted: true };
      }
      default:
        throw new SteerlineError('invalid_request', `unknown turn command ${verb}`);
    }
  };
  const onConversationSteer = async (body: unknown) => {
    const command = parseBody(SubmitConversationSteerCommand, body);
    owned(command.tenantId);
    // Resolved here, by the owner, so the check and the acceptance are one step (docs/design.md §2.10).
    if (command.expectedTurnId && command.expectedTurnId !== runner.turnId) {
      throw new SteerlineError('turn_moved_on', `the running turn is ${runner.turnId}`, { turnId: runner.turnId });
    }
    return runner.submitSteer(command.steerId ?? uuidv7(), command.text, command);
  };
  // Starts with whenBusy "queue" forwarded by other engines: queued here, by the conversation's writer.
  const onQueue = async (body: unknown) => {
    const command = parseBody(StartTurnCommand, body);
    owned(command.tenantId);
    return turns.start(command);
  };
  return [
    serve(nc, s.turnCommands(runner.turnId), onTurnCommand, { onError }),
    serve(nc, s.conversationSteer(runner.conversationId), onConversationSteer, { onError }),
    serve(nc, s.conversationQueue(runner.conversationId), onQueue, { onError }),
  ];
}

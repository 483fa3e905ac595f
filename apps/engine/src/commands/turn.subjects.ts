import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  CancelTurnCommand,
  DecideApprovalCommand,
  EditSteerCommand,
  StartTurnCommand,
  SteerlineError,
  SubmitConversationSteerCommand,
  SubmitSteerCommand,
  WithdrawSteerCommand,
  parseBody,
  uuidv7,
  type Subjects,
} from '@steerline/contracts';
import { answer, type ServeErrorHandler } from '@steerline/runtime';
import type { TurnRegistry } from '../turn/turn.registry';
import type { TurnRunner } from '../turn/turn.runner';

/**
 * The owner's subjects of its running turns: two subscriptions per turn,
 * `<prefix>.cmd.turn.<turnId>.*` (steer, edit, withdraw, approval, cancel) and
 * `<prefix>.cmd.conv.<conversationId>.*` (steer by conversation, queued
 * starts forwarded by other engines), each answered by one callback shared by
 * every turn, which finds the turn by the subject's id.
 *
 * Still one subscription per turn and subject, not one wildcard per engine:
 * the server then knows that nobody runs a turn, and answers "no responders"
 * at once — `turn_not_running`, or 503 while the turn moves between engines.
 * With a wildcard every engine would hear every turn's commands and a command
 * to a turn nobody runs would wait out its timeout (docs/performance.md).
 */
export function turnSubjects(nc: NatsConnection, s: Subjects, turns: TurnRegistry, onError: ServeErrorHandler): (runner: TurnRunner) => Subscription[] {
  const report: ServeErrorHandler = (err, context) => {
    try {
      onError(err, context);
    } catch {
      // A failing logger must not take the responder down with it.
    }
  };
  const onTurn = (err: Error | null, msg: Msg) => (err ? report(err, { subject: msg?.subject ?? 'cmd.turn' }) : void answer(nc, msg, turnCommand, report));
  const onConversation = (err: Error | null, msg: Msg) => (err ? report(err, { subject: msg?.subject ?? 'cmd.conv' }) : void answer(nc, msg, conversationCommand, report));

  const turnCommand = async (body: unknown, msg: Msg) => {
    const { id: turnId, verb } = idAndVerb(msg.subject);
    const runner = turns.turn(turnId);
    if (!runner) throw new SteerlineError('turn_not_running', `turn ${turnId} is not running`);
    switch (verb) {
      case 'steer': {
        const command = owned(runner, parseBody(SubmitSteerCommand, body));
        return runner.submitSteer(command.steerId ?? uuidv7(), command.text, command);
      }
      case 'edit': {
        const command = owned(runner, parseBody(EditSteerCommand, body));
        return runner.editSteer(command.steerId, command.text);
      }
      case 'withdraw':
        return runner.withdraw(owned(runner, parseBody(WithdrawSteerCommand, body)).steerId);
      case 'approval': {
        const command = owned(runner, parseBody(DecideApprovalCommand, body));
        return runner.decideApproval(command.toolCallId, command.decision === 'approve' ? 'approved' : 'denied', command.reason);
      }
      case 'cancel': {
        const command = owned(runner, parseBody(CancelTurnCommand, body));
        await runner.cancel(command.reason ?? 'cancelled by the client');
        return { accepted: true };
      }
      default:
        throw new SteerlineError('invalid_request', `unknown turn command ${verb}`);
    }
  };

  const conversationCommand = async (body: unknown, msg: Msg) => {
    const { id: conversationId, verb } = idAndVerb(msg.subject);
    const runner = turns.runningIn(conversationId);
    if (!runner) throw new SteerlineError('turn_not_running', `no turn of conversation ${conversationId} runs`);
    if (verb === 'steer') {
      const command = owned(runner, parseBody(SubmitConversationSteerCommand, body));
      // Resolved here, by the owner, so the check and the acceptance are one step (docs/design.md §2.10).
      if (command.expectedTurnId && command.expectedTurnId !== runner.turnId) {
        throw new SteerlineError('turn_moved_on', `the running turn is ${runner.turnId}`, { turnId: runner.turnId });
      }
      return runner.submitSteer(command.steerId ?? uuidv7(), command.text, command);
    }
    if (verb === 'queue') {
      // Starts with whenBusy "queue" forwarded by other engines: queued here, by the conversation's writer.
      return turns.start(owned(runner, parseBody(StartTurnCommand, body)));
    }
    throw new SteerlineError('invalid_request', `unknown conversation command ${verb}`);
  };

  return (runner) => [
    nc.subscribe(s.turnCommands(runner.turnId), { callback: onTurn }),
    nc.subscribe(s.conversationCommands(runner.conversationId), { callback: onConversation }),
  ];
}

/** `<prefix>.cmd.<turn|conv>.<id>.<verb>`: a prefix is one token, so the id and the verb are the last two. */
function idAndVerb(subject: string): { id: string; verb: string } {
  const verbAt = subject.lastIndexOf('.');
  return { id: subject.slice(subject.lastIndexOf('.', verbAt - 1) + 1, verbAt), verb: subject.slice(verbAt + 1) };
}

/** Another tenant's turn does not exist for this caller. */
function owned<T extends { tenantId: string }>(runner: TurnRunner, command: T): T {
  if (command.tenantId !== runner.tenantId) throw new SteerlineError('not_found', `turn ${runner.turnId} not found`);
  return command;
}

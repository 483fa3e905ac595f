import {
  AwaitApprovalCommand,
  PublishLiveCommand,
  RenewLeaseCommand,
  ReportAnswerCommand,
  ReportInterruptedCommand,
  ReportResultsCommand,
  RunnerFailCommand,
  RUNNER_VERBS,
  SteerlineError,
  parseBody,
} from '@steerline/contracts';
import { RemoteTurnRunner } from '../turn/turn.remote-runner';
import type { TurnRunner } from '../turn/turn.runner';

const VERBS = new Set<string>(Object.values(RUNNER_VERBS));

export function isRunnerVerb(verb: string): boolean {
  return VERBS.has(verb);
}

/**
 * An external turn's runner reports (docs/runner-protocol.md), on the turn's
 * own subjects like its steers. Another tenant's turn is not found; the lease
 * is checked by the turn's shell, before anything is decided.
 */
export function runnerCommand(runner: TurnRunner, verb: string, body: unknown): Promise<unknown> | unknown {
  const owned = <T extends { tenantId: string }>(command: T): T => {
    if (command.tenantId !== runner.tenantId) throw new SteerlineError('not_found', `turn ${runner.turnId} not found`);
    if (!(runner instanceof RemoteTurnRunner)) throw new SteerlineError('invalid_request', `turn ${runner.turnId} is run by the engine, not by an external runner`);
    return command;
  };
  const remote = runner as RemoteTurnRunner;
  switch (verb) {
    case RUNNER_VERBS.answer:
      return remote.reportAnswer(owned(parseBody(ReportAnswerCommand, body)));
    case RUNNER_VERBS.results:
      return remote.reportResults(owned(parseBody(ReportResultsCommand, body)));
    case RUNNER_VERBS.fail:
      return remote.reportFailure(owned(parseBody(RunnerFailCommand, body)));
    case RUNNER_VERBS.lease:
      return remote.renewLease(owned(parseBody(RenewLeaseCommand, body)));
    case RUNNER_VERBS.approval:
      return remote.awaitApproval(owned(parseBody(AwaitApprovalCommand, body)));
    case RUNNER_VERBS.interrupted:
      return remote.reportInterrupted(owned(parseBody(ReportInterruptedCommand, body)));
    case RUNNER_VERBS.live:
      return remote.publishLive(owned(parseBody(PublishLiveCommand, body)));
    default:
      throw new SteerlineError('invalid_request', `unknown runner command ${verb}`);
  }
}

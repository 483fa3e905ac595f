import { ClosedConnectionError, DrainingConnectionError, InvalidArgumentError } from '@nats-io/transport-node';

export interface GuardLog {
  /** A failure the process survives. */
  error(entry: Record<string, unknown>): void;
  /** The last line before the process exits for a restart. */
  fatal(entry: Record<string, unknown>): void;
}

/**
 * The process-level guard every service installs (docs/reliability.md):
 *
 * - An unhandled promise rejection is logged and the process goes on. The
 *   promise's work was already abandoned by whoever dropped it; no stack was
 *   unwound through shared code, and every state change (a turn's decider, the
 *   projector's batch) is made only after its append or transaction succeeded.
 * - A failed NATS send that escaped (max_payload, closed or draining
 *   connection) is logged and the process goes on: nats.js throws it before a
 *   byte is written, so the connection and its parser are intact.
 * - Any other uncaught exception is logged and the process exits with 1: the
 *   stack was unwound through code that did not expect it, so in-memory state
 *   (a turn runner's queue, a half-read NATS buffer) cannot be trusted. The
 *   supervisor restarts it; the log keeps every fact, orphaned turns are
 *   settled by the lease reaper and the projector resumes from its checkpoint.
 */
export function installProcessGuard(service: string, log: GuardLog = stderrLog, exit: (code: number) => void = (code) => process.exit(code)): () => void {
  const { onRejection, onException } = guardHandlers(service, log, exit);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return () => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  };
}

/** The guard's two decisions, apart from `process` so they can be tested. */
export function guardHandlers(service: string, log: GuardLog, exit: (code: number) => void) {
  return {
    onRejection: (reason: unknown) => log.error({ msg: 'unhandled promise rejection; continuing', service, ...describe(reason) }),
    onException: (err: unknown) => {
      if (isFailedSend(err)) return log.error({ msg: 'uncaught failed NATS send; continuing', service, ...describe(err) });
      log.fatal({ msg: 'uncaught exception; exiting for a restart', service, ...describe(err) });
      exit(1);
    },
  };
}

/** One JSON line on stderr per entry: works before and after any app logger exists. */
const stderrLog: GuardLog = {
  error: (entry) => process.stderr.write(`${JSON.stringify({ level: 'error', time: new Date().toISOString(), ...entry })}\n`),
  fatal: (entry) => process.stderr.write(`${JSON.stringify({ level: 'fatal', time: new Date().toISOString(), ...entry })}\n`),
};

/** A call nats.js refused before writing anything: a bad argument (max_payload among them), a closed or draining connection. */
export function isFailedSend(err: unknown): boolean {
  return err instanceof ClosedConnectionError || err instanceof DrainingConnectionError || err instanceof InvalidArgumentError;
}

function describe(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { error: err.message, errorName: err.name, stack: err.stack };
  return { error: String(err) };
}

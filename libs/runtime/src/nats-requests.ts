import { RequestOne, type Msg } from '@nats-io/transport-node';

/** The part of nats.js's one-reply request (nats-core 3.x `RequestOne`) that settles it. */
interface Settling {
  resolver(err: Error | null, msg: Msg): void;
  cancel(err?: Error): void;
  deferred: { resolve(msg: Msg): void };
  timer?: { cancel(): void };
  mux: { cancel(request: unknown): void };
}

let installed = false;

/**
 * Ends an answered NATS request without the error nats.js builds for nobody.
 *
 * nats.js 3.x settles a request's promise with the answer, then calls `cancel()`, which rejects
 * that (already settled) promise with a new `RequestError("cancelled")`: an Error, its stack
 * captured, per successful request — every steer's request from the gateway and every JetStream
 * append of the engine (4–6 % of their CPU profiles under load, issue 34). Here an answer does
 * what nats.js does minus that error: the timer cancelled, the promise resolved, the request's
 * token forgotten. Failures (no responders, a timeout, a closed connection) keep nats.js's path.
 * For the whole process, once (`connectNats` installs it); a nats.js of another shape is left alone.
 */
export function settleAnswersQuietly(): void {
  if (installed) return;
  installed = true;
  const proto = RequestOne.prototype as unknown as Settling;
  if (typeof proto.resolver !== 'function' || typeof proto.cancel !== 'function') return;
  const resolver = proto.resolver;
  proto.resolver = function (this: Settling, err: Error | null, msg: Msg) {
    if (err || !this.deferred || !this.mux) return resolver.call(this, err, msg);
    this.timer?.cancel();
    this.deferred.resolve(msg);
    this.mux.cancel(this);
  };
}

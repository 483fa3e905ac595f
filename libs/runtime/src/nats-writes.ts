import type { NatsConnection } from '@nats-io/transport-node';

/** The part of nats.js's protocol handler (nats-core 3.x ProtocolHandler) that queues and writes commands. */
interface Outbound {
  outbound: { length(): number; size(): number; fill(buf: Uint8Array, ...payloads: unknown[]): void };
  pendingLimit: number;
  flushPending(): void;
  sendCommand(cmd: string | Uint8Array, ...payloads: unknown[]): void;
}

/**
 * Makes the connection write what it queued once per turn of the event loop
 * (`setImmediate`) instead of once per microtask checkpoint, as nats.js does.
 * A gateway handles each HTTP request in an I/O callback of its own, so with
 * nats.js's microtask every steer's NATS request was a system call of its own
 * (a loopback TCP write that does the server's receive work in this process);
 * now the requests of every socket read in one poll phase go out in one write.
 * Order is unchanged (one buffer, one writer); a command waits at most until
 * the loop's check phase, the same iteration. A buffer past nats.js's pending
 * limit is still written at once. Commands are encoded as `poolCommands` does.
 */
export function coalesceWrites(nc: NatsConnection): void {
  sendCommandsWith(nc, (flush) => setImmediate(flush));
}

/**
 * Writes each command's protocol line (`PUB <subject> <reply> <sizes>`) into Node's shared
 * 8 KiB pool (`Buffer.from`) instead of nats.js's `TextEncoder.encode`, which gives every
 * line an ArrayBuffer of its own (~800 against ~100 ns for a 110-byte `HPUB` line, and one object
 * fewer for the GC; an engine publishes one per event). Writes are flushed at the microtask
 * checkpoint, as nats.js does.
 */
export function poolCommands(nc: NatsConnection): void {
  sendCommandsWith(nc, (flush) => queueMicrotask(flush));
}

function sendCommandsWith(nc: NatsConnection, schedule: (flush: () => void) => void): void {
  const protocol = (nc as unknown as { protocol?: Partial<Outbound> }).protocol;
  // Another nats.js shape: keep its own behaviour rather than guess.
  if (!protocol || typeof protocol.flushPending !== 'function' || typeof protocol.sendCommand !== 'function' || !protocol.outbound) return;
  const p = protocol as Outbound;
  const flush = () => p.flushPending();
  p.sendCommand = function sendCommand(cmd, ...payloads) {
    const queued = p.outbound.length();
    p.outbound.fill(typeof cmd === 'string' ? Buffer.from(cmd) : cmd, ...payloads);
    if (queued === 0) schedule(flush);
    else if (p.outbound.size() >= p.pendingLimit) p.flushPending();
  };
}

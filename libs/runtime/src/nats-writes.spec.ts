import { randomBytes } from 'node:crypto';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { NATS_URL } from '../../../test/support/env';
import { connectNats, decodeJson, encodeJson } from './nats';
import { coalesceWrites, poolCommands } from './nats-writes';

/** Counts the socket writes of a connection (nats.js hands each flush to its transport's `send`). */
function countWrites(nc: NatsConnection): () => number {
  const transport = (nc as unknown as { protocol: { transport: { send(frame: Uint8Array): void } } }).protocol.transport;
  const send = transport.send.bind(transport);
  let writes = 0;
  transport.send = (frame) => {
    writes++;
    send(frame);
  };
  return () => writes;
}

/** Ten publishes, each after a microtask checkpoint (as HTTP requests handled one by one are), within one loop turn. */
async function publishTen(nc: NatsConnection, subject: string): Promise<void> {
  for (let i = 0; i < 10; i++) {
    nc.publish(subject, encodeJson({ i }));
    await Promise.resolve();
  }
}

const connections: NatsConnection[] = [];
afterAll(async () => Promise.all(connections.map((nc) => nc.close())));

/** A connection, with `writes` (coalesceWrites or poolCommands) on it, or nats.js's own. */
async function open(writes?: (nc: NatsConnection) => void): Promise<NatsConnection> {
  const nc = await connectNats(NATS_URL, 'nats-writes-spec');
  connections.push(nc);
  writes?.(nc);
  await nc.flush();
  return nc;
}

describe.each([
  ['coalesceWrites', coalesceWrites],
  ['poolCommands', poolCommands],
] as const)('%s', (_name, writes) => {
  it('still answers requests', async () => {
    const subject = `nats-writes-spec.${randomBytes(4).toString('hex')}`;
    const responder = await open(writes);
    responder.subscribe(subject, { callback: (_err, msg) => void msg.respond(msg.data) });
    await responder.flush();
    const requester = await open(writes);
    const answers = await Promise.all([1, 2, 3].map((n) => requester.request(subject, encodeJson({ n }), { timeout: 5000 })));
    expect(answers.map((m) => decodeJson(m.data))).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });
});

describe('coalesceWrites', () => {
  it('writes what a loop turn queued in one write, in order, where nats.js alone writes once per microtask checkpoint', async () => {
    const subject = `nats-writes-spec.${randomBytes(4).toString('hex')}`;
    const reader = await open();
    const got: number[] = [];
    const sub = reader.subscribe(subject, { max: 20, callback: (_err, msg) => void got.push((decodeJson(msg.data) as { i: number }).i) });
    await reader.flush();

    const plain = await open();
    const plainWrites = countWrites(plain);
    await publishTen(plain, subject);
    await plain.flush();
    const coalesced = await open(coalesceWrites);
    const coalescedWrites = countWrites(coalesced);
    await publishTen(coalesced, subject);
    await coalesced.flush();

    expect(plainWrites()).toBeGreaterThanOrEqual(10);
    // The ten publishes, then the flush's PING.
    expect(coalescedWrites()).toBeLessThanOrEqual(2);
    await sub.closed;
    expect(got).toEqual([...Array(10).keys(), ...Array(10).keys()]);
  });
});

describe('poolCommands', () => {
  it('writes as nats.js does (once per microtask checkpoint), and every message arrives whole, in order, with its headers', async () => {
    // A subject token outside ASCII: its protocol line is UTF-8, as nats.js writes it.
    const subject = `nats-writes-spec.${randomBytes(4).toString('hex')}.zürich`;
    const reader = await open();
    const got: { i: number; type: string; subject: string }[] = [];
    const sub = reader.subscribe(subject, {
      max: 10,
      callback: (_err, msg) => void got.push({ i: (decodeJson(msg.data) as { i: number }).i, type: msg.headers?.get('Steerline-Event-Type') ?? '', subject: msg.subject }),
    });
    await reader.flush();
    const pooled = await open(poolCommands);
    const writes = countWrites(pooled);
    for (let i = 0; i < 10; i++) {
      const h = headers();
      h.set('Steerline-Event-Type', `Type${i}`);
      pooled.publish(subject, encodeJson({ i }), { headers: h });
      await Promise.resolve();
    }
    await pooled.flush();
    expect(writes()).toBeGreaterThanOrEqual(10);
    await sub.closed;
    expect(got).toEqual([...Array(10).keys()].map((i) => ({ i, type: `Type${i}`, subject })));
  });
});

import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NatsConnection } from '@nats-io/transport-node';
import { type Subjects } from '@steerline/contracts';
import { encodeJson } from '@steerline/runtime';
import { openSseWatcher } from './sse-watcher';
import { median, percentile } from './stats';

const SAMPLES = 300;

/**
 * Live output's path (issue 13): a ModelDelta published on core NATS (as the
 * engine does) until an SSE client of the gateway has read it, next to its
 * floor measured in the same run: a raw core NATS publish → subscribe hop
 * plus a raw HTTP chunk write → read on loopback.
 */
export async function measureLivePath(opts: { nc: NatsConnection; s: Subjects; gatewayUrl: string; cid: string }) {
  const subject = opts.s.conversationLive('default', opts.cid);
  let arrived: () => void = () => undefined;
  const watcher = await openSseWatcher(`${opts.gatewayUrl}/v1/conversations/${opts.cid}/events`, {}, { onLive: () => arrived() });
  const next = () => new Promise<void>((resolve) => (arrived = resolve));
  /** SAMPLES times: `send(i)`, then the time until the receiving side calls `arrived`, in ms. */
  const roundTrips = async (send: (i: number) => void): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const got = next();
      const t0 = performance.now();
      send(i);
      await got;
      out.push(performance.now() - t0);
    }
    return out;
  };
  const delta = (i: number) => encodeJson({ type: 'ModelDelta', turnId: '0190a000-0000-7000-8000-000000000001', step: 1, index: i, text: 'word ' });
  // The stream must be past its replay: a first delta arrives only then.
  for (let i = 0; watcher.live.length === 0 && i < 200; i++) {
    opts.nc.publish(subject, delta(0));
    await new Promise((r) => setTimeout(r, 25));
  }
  if (watcher.live.length === 0) throw new Error(`no live message reached the SSE client (status ${watcher.status}, ids ${watcher.ids.length})`);
  const gateway = await roundTrips((i) => opts.nc.publish(subject, delta(i)));
  watcher.close();

  // Floor, part 1: core NATS publish → subscribe, same payload.
  const hop = `${opts.s.prefix}.benchhop`;
  const sub = opts.nc.subscribe(hop, { callback: () => arrived() });
  await opts.nc.flush();
  const nats = await roundTrips((i) => opts.nc.publish(hop, delta(i)));
  sub.unsubscribe();

  // Floor, part 2: one chunk written on an open HTTP response until the client reads it.
  let write!: (chunk: string) => void;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // Headers go out now: the client's response event waits for them.
    res.flushHeaders();
    write = (chunk) => res.write(chunk);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  await new Promise<void>((resolve) =>
    request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, (res) => {
      res.on('data', () => arrived());
      resolve();
    }).end(),
  );
  for (let i = 0; i < 200 && write === undefined; i++) await new Promise((r) => setTimeout(r, 5));
  const http = await roundTrips((i) => write(`event: ModelDelta\ndata: ${JSON.stringify({ i })}\n\n`));
  server.closeAllConnections();
  server.close();
  return {
    p50: median(gateway),
    p99: percentile(gateway, 99),
    floorP50: median(nats) + median(http),
    floorP99: percentile(nats, 99) + percentile(http, 99),
  };
}

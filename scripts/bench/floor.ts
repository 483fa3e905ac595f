/**
 * The bench's floor processes: what a steer cannot go below, without Nest, Express,
 * validation, auth, logging or the engine's decision. Started by raw.ts as
 * `node floor.js <role>`; each prints one JSON line `{"msg":"floor ready", …}`.
 *
 *   http       a bare node:http server answering every request with a small JSON body
 *   pipeline   a bare node:http server that, per POST, reads the body, makes one core NATS
 *              request with it to FLOOR_SUBJECT and answers with the reply (the gateway's shape)
 *   responder  a bare NATS responder on FLOOR_SUBJECT that makes one JetStream publish to
 *              FLOOR_LOG, waits for its ack, and replies (the engine's shape)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstream } from '@nats-io/jetstream';
import { connectNats } from '@steerline/runtime';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const SUBJECT = process.env.FLOOR_SUBJECT ?? 'floor.request';
const LOG = process.env.FLOOR_LOG ?? 'floor.log';
const OK = Buffer.from('{"status":"ok"}');

function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer({ keepAliveTimeout: 60_000 }, handler);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function answer(res: ServerResponse, status: number, body: Uint8Array): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

async function http(): Promise<Record<string, unknown>> {
  return { url: await listen((_req, res) => answer(res, 200, OK)) };
}

async function pipeline(): Promise<Record<string, unknown>> {
  const nc = await connectNats(NATS_URL, 'floor-pipeline');
  const url = await listen((req, res) => {
    readBody(req)
      .then((body) => nc.request(SUBJECT, body, { timeout: 5000 }))
      .then(
        (reply) => answer(res, 202, reply.data),
        () => answer(res, 503, Buffer.from('{"error":"unavailable"}')),
      );
  });
  return { url };
}

async function responder(): Promise<Record<string, unknown>> {
  const nc = await connectNats(NATS_URL, 'floor-responder');
  const js = jetstream(nc);
  let n = 0;
  nc.subscribe(SUBJECT, {
    callback: (_err, msg) => {
      const i = n++;
      js.publish(`${LOG}.c${i % 50}`, msg.data, { msgID: `floor-${process.pid}-${i}` }).then(
        (ack) => msg.respond(`{"seq":${ack.seq}}`),
        () => msg.respond('{"error":"unavailable"}'),
      );
    },
  });
  await nc.flush();
  return { subject: SUBJECT };
}

const roles: Record<string, () => Promise<Record<string, unknown>>> = { http, pipeline, responder };
const role = roles[process.argv[2] ?? ''];
if (!role) {
  console.error(`usage: floor.js ${Object.keys(roles).join('|')}`);
  process.exit(2);
}
role().then(
  (ready) => console.log(JSON.stringify({ msg: 'floor ready', role: process.argv[2], ...ready })),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

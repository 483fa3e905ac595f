/**
 * The bench's floor processes: what a steer cannot go below, without Nest, Express,
 * validation, auth, logging or the engine's decision. Started by raw.ts as
 * `node floor.js <role>`; each prints one JSON line `{"msg":"floor ready", …}`.
 *
 *   http       a bare node:http server answering every request with a small JSON body
 *   pipeline   a bare node:http server that, per POST, reads the body, makes one core NATS
 *              request with it to FLOOR_SUBJECT and answers with the reply (the gateway's shape)
 *   responder  a bare NATS responder on FLOOR_SUBJECT that makes one JetStream publish to
 *              FLOOR_LOG, waits for its ack, and replies (the engine's shape); a request on
 *              `FLOOR_SUBJECT.projected` (the pipeline's `POST /projected`) is published under
 *              `FLOOR_LOG.projected`, which the bare projector reads
 *   projector  a bare read side (persistence's shape): a durable pull consumer (FLOOR_CONSUMER on
 *              FLOOR_STREAM, acking a batch's last message) hands over what came; while one
 *              transaction inserts a batch's rows and moves a checkpoint in FLOOR_DATABASE_URL
 *              (schema `floor`), the next batch gathers
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstream, type JsMsg } from '@nats-io/jetstream';
import { Client } from 'pg';
import { connectNats } from '@steerline/runtime';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const SUBJECT = process.env.FLOOR_SUBJECT ?? 'floor.request';
const LOG = process.env.FLOOR_LOG ?? 'floor.log';
const OK = Buffer.from('{"status":"ok"}');
/** The bare projector's batches: at most as many messages, and as long a wait, as the projector's (partition-loop.ts). */
const FLOOR_BATCH = 500;
const FLOOR_LINGER_MS = 100;

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
      .then((body) => nc.request(req.url === '/projected' ? `${SUBJECT}.projected` : SUBJECT, body, { timeout: 5000 }))
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
  const respond = (log: string) => (_err: unknown, msg: { data: Uint8Array; respond(data: string): boolean }) => {
    const i = n++;
    js.publish(`${log}.c${i % 50}`, msg.data, { msgID: `floor-${process.pid}-${i}` }).then(
      (ack) => msg.respond(`{"seq":${ack.seq}}`),
      () => msg.respond('{"error":"unavailable"}'),
    );
  };
  nc.subscribe(SUBJECT, { callback: respond(LOG) });
  nc.subscribe(`${SUBJECT}.projected`, { callback: respond(`${LOG}.projected`) });
  await nc.flush();
  return { subject: SUBJECT };
}

async function projector(): Promise<Record<string, unknown>> {
  const db = new Client({ connectionString: process.env.FLOOR_DATABASE_URL });
  await db.connect();
  await db.query(`CREATE SCHEMA IF NOT EXISTS floor;
    CREATE TABLE IF NOT EXISTS floor.log (seq bigint PRIMARY KEY, subject text NOT NULL, data text NOT NULL);
    CREATE TABLE IF NOT EXISTS floor.checkpoint (id int PRIMARY KEY, seq bigint NOT NULL, batches bigint NOT NULL, events bigint NOT NULL);
    INSERT INTO floor.checkpoint VALUES (1, 0, 0, 0) ON CONFLICT DO NOTHING`);
  const backend = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const nc = await connectNats(NATS_URL, 'floor-projector');
  const consumer = await jetstream(nc).consumers.get(process.env.FLOOR_STREAM!, process.env.FLOOR_CONSUMER!);
  const decoder = new TextDecoder();
  const gathered: JsMsg[] = [];
  let wake: (() => void) | undefined;
  // Woken by the first message of a batch, and again once it is full.
  const gather = (m: JsMsg) => {
    gathered.push(m);
    if (gathered.length === 1 || gathered.length >= FLOOR_BATCH) wake?.();
  };
  await consumer.consume({ max_messages: 2 * FLOOR_BATCH, callback: gather });
  void (async () => {
    for (;;) {
      if (!gathered.length) await new Promise<void>((r) => (wake = r));
      // As the projector's linger does at the most: a batch gathers for up to FLOOR_LINGER_MS, or until full.
      if (gathered.length < FLOOR_BATCH) await new Promise<void>((r) => ((wake = r), setTimeout(r, FLOOR_LINGER_MS)));
      wake = undefined;
      const batch = gathered.splice(0, FLOOR_BATCH);
      const last = batch[batch.length - 1];
      await db.query('BEGIN');
      await db.query('INSERT INTO floor.log SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING', [
        batch.map((m) => m.seq),
        batch.map((m) => m.subject),
        batch.map((m) => decoder.decode(m.data)),
      ]);
      await db.query('UPDATE floor.checkpoint SET seq = $1, batches = batches + 1, events = events + $2 WHERE id = 1', [last.seq, batch.length]);
      await db.query('COMMIT');
      last.ack();
    }
  })().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
  return { backend };
}

const roles: Record<string, () => Promise<Record<string, unknown>>> = { http, pipeline, responder, projector };
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

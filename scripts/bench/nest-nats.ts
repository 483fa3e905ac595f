/**
 * Nest's NATS transport vs the raw nats.js responder, for a query-shaped
 * request/reply (the persistence's `qry.*`): README "Decisions" quotes it.
 *
 *   npm run -s build && node --expose-gc dist/scripts/bench/nest-nats.js
 *
 * Three ways to answer the same JSON query with the same 2 KB JSON view, in
 * one process, over the NATS at NATS_URL; rounds interleaved so drift on a
 * shared machine hits all three alike:
 *   raw        nats.js subscribe + respond, nats.js request (what runs today)
 *   nest       @MessagePattern on Nest's NATS transport, Nest's ClientProxy.send
 *   nest+raw   @MessagePattern, nats.js request with Nest's envelope (the gateway's client kept)
 */
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxyFactory, MessagePattern, Payload, Transport, type ClientProxy, type MicroserviceOptions } from '@nestjs/microservices';
import { uuidv7 } from '@steerline/contracts';
import { connectNats } from '@steerline/runtime';
import { firstValueFrom, timeout } from 'rxjs';
import { median, percentile, timeEach } from './stats';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const prefix = `benchnest${Date.now().toString(36)}`;
const RAW = `${prefix}.qry.raw`;
const NEST = `${prefix}.qry.nest`;
const ROUNDS = 3;
const PER_ROUND = 1500;

// A turn view of ordinary size: a few steers with their texts.
const view = {
  turnId: uuidv7(),
  conversationId: uuidv7(),
  status: 'running',
  steers: Array.from({ length: 8 }, (_, i) => ({ steerId: uuidv7(), status: 'delivered', position: i + 1, step: i, text: 'a steer of ordinary length, about sixty characters, twice over '.repeat(2) })),
};
const answer = (query: { turnId: string }) => ({ ...view, turnId: query.turnId });

@Controller()
class QueryController {
  @MessagePattern(NEST)
  turn(@Payload() query: { turnId: string }) {
    return answer(query);
  }
}
@Module({ controllers: [QueryController] })
class QueryModule {}

async function main(): Promise<void> {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const responder = await connectNats(NATS_URL, 'bench-raw-responder');
  responder.subscribe(RAW, {
    callback: (_err, msg) => {
      msg.respond(encoder.encode(JSON.stringify(answer(JSON.parse(decoder.decode(msg.data))))));
    },
  });
  await responder.flush();

  const server = await NestFactory.createMicroservice<MicroserviceOptions>(QueryModule, { transport: Transport.NATS, options: { servers: [NATS_URL] }, logger: false });
  await server.listen();
  const client: ClientProxy = ClientProxyFactory.create({ transport: Transport.NATS, options: { servers: [NATS_URL] } });
  await client.connect();
  const nc = await connectNats(NATS_URL, 'bench-requester');

  const query = () => ({ turnId: uuidv7() });
  const ways: Record<string, () => Promise<unknown>> = {
    raw: async () => JSON.parse(decoder.decode((await nc.request(RAW, encoder.encode(JSON.stringify(query())), { timeout: 5000 })).data)),
    nest: () => firstValueFrom(client.send(NEST, query()).pipe(timeout(5000))),
    'nest+raw': async () => {
      const reply = JSON.parse(decoder.decode((await nc.request(NEST, encoder.encode(JSON.stringify({ pattern: NEST, data: query(), id: uuidv7() })), { timeout: 5000 })).data));
      if (reply.err) throw new Error(String(reply.err));
      return reply.response;
    },
  };
  for (const run of Object.values(ways)) await timeEach(300, run); // warm-up, and a check that each answers
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) for (const [name, run] of Object.entries(ways)) samples[name].push(...(await timeEach(PER_ROUND, run)));

  const rawP50 = median(samples.raw);
  console.log(`NATS request/reply of a 2 KB query view, ${ROUNDS}×${PER_ROUND} each, Node ${process.version}`);
  console.log('| responder / requester | p50 | p99 | p50 ratio to raw |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const [name, s] of Object.entries(samples)) console.log(`| ${name} | ${median(s).toFixed(3)} ms | ${percentile(s, 99).toFixed(3)} ms | ${(median(s) / rawP50).toFixed(2)}× |`);

  await client.close();
  await server.close();
  await responder.close();
  await nc.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

import { randomBytes } from 'node:crypto';
import { RequestError, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { NATS_URL } from '../../../test/support/env';
import { connectNats, decodeJson, encodeJson, request } from './nats';

/** Counts the RequestErrors built while `run` runs (their constructor sets `name`). */
async function requestErrorsDuring(run: () => Promise<void>): Promise<number> {
  let built = 0;
  const desc = Object.getOwnPropertyDescriptor(RequestError.prototype, 'name');
  Object.defineProperty(RequestError.prototype, 'name', {
    configurable: true,
    set(this: Error, v: string) {
      built++;
      Object.defineProperty(this, 'name', { value: v, writable: true, configurable: true });
    },
  });
  try {
    await run();
  } finally {
    if (desc) Object.defineProperty(RequestError.prototype, 'name', desc);
    else delete (RequestError.prototype as { name?: string }).name;
  }
  return built;
}

describe('settleAnswersQuietly (installed by connectNats)', () => {
  let nc: NatsConnection;
  const prefix = `nats-requests-spec-${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    nc = await connectNats(NATS_URL, 'nats-requests-spec');
  });
  afterAll(async () => {
    await (await jetstreamManager(nc)).streams.delete(prefix).catch(() => undefined);
    await nc.close();
  });

  it('answers requests, core and JetStream, in order, without an error built per answer', async () => {
    const subject = `${prefix}.echo`;
    nc.subscribe(subject, { callback: (_err, msg) => void msg.respond(msg.data) });
    nc.subscribe(`${subject}.reply`, { callback: (_err, msg) => void msg.respond(encodeJson({ ok: true, data: decodeJson(msg.data) })) });
    await nc.flush();
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: prefix, subjects: [`${prefix}.log`] });
    const js = jetstream(nc);
    const answers: number[] = [];
    const seqs: number[] = [];
    const built = await requestErrorsDuring(async () => {
      for (let i = 0; i < 20; i++) answers.push((decodeJson((await nc.request(subject, encodeJson({ i }), { timeout: 2000 })).data) as { i: number }).i);
      answers.push(...(await Promise.all([20, 21, 22].map((i) => request<{ i: number }>(nc, `${subject}.reply`, { i }, { timeoutMs: 2000, noResponders: 'unavailable' })))).map((a) => a.i));
      for (let i = 0; i < 5; i++) seqs.push((await js.publish(`${prefix}.log`, encodeJson({ i }))).seq);
    });
    expect(answers).toEqual([...Array(23).keys()]);
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
    expect(built).toBe(0);
  });

  it('keeps nats.js failures: nobody answering, and a timeout', async () => {
    await expect(request(nc, `${prefix}.nobody`, {}, { timeoutMs: 2000, noResponders: 'turn_not_running' })).rejects.toMatchObject({ code: 'turn_not_running' });
    const silent = `${prefix}.silent`;
    nc.subscribe(silent, { callback: () => undefined });
    await nc.flush();
    await expect(request(nc, silent, {}, { timeoutMs: 200, noResponders: 'unavailable' })).rejects.toMatchObject({ code: 'unavailable', message: expect.stringContaining('within 200 ms') });
    // And the requests after them are answered as before.
    const subject = `${prefix}.after`;
    nc.subscribe(subject, { callback: (_err, msg) => void msg.respond(encodeJson({ ok: true, data: 'yes' })) });
    await nc.flush();
    await expect(request(nc, subject, {}, { timeoutMs: 2000, noResponders: 'unavailable' })).resolves.toBe('yes');
  });
});

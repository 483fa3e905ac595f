import { jetstreamManager } from '@nats-io/jetstream';
import { subjects } from '@steerline/contracts';
import { ensureStream } from '@steerline/runtime';
import { NATS_URL, openNats, uniquePrefix, type NatsHandle } from '../../../../test/support/env';
import { NextOnSubject } from './next-on-subject';

/** Real NATS: what the remembered "next event on a subject" answers as the log grows, and what it asks the stream. */
describe('NextOnSubject', () => {
  const prefix = uniquePrefix();
  const s = subjects(prefix, { subjectPartitions: 4 });
  let nats: NatsHandle;
  let asked = 0;
  let next: NextOnSubject;
  const append = async (subject: string) => (await nats.js.publish(subject, '{}')).seq;
  const last = async () => (await nats.jsm.streams.info(s.stream)).state.last_seq;

  beforeAll(async () => {
    nats = await openNats(prefix, NATS_URL);
    await ensureStream(nats.jsm, s);
    const jsm = await jetstreamManager(nats.nc);
    next = new NextOnSubject(async () => {
      asked += 1;
      return jsm;
    }, s.stream);
  });

  afterAll(async () => {
    await nats?.close();
  });

  it('answers the first event on a wildcard at or after a sequence, and asks again only about what came since', async () => {
    await append(`${prefix}.evt.t.a.1`);
    await append(`${prefix}.evt.t.b.2`);
    expect(await next.next(s.partitionEvents(3), 1, await last())).toBeUndefined();
    // Nothing new: known without asking.
    const before = asked;
    expect(await next.next(s.partitionEvents(3), 1, await last())).toBeUndefined();
    expect(asked).toBe(before);

    const third = await append(`${prefix}.evt.t.c.3`);
    await append(`${prefix}.evt.t.d.3`);
    expect(await next.next(s.partitionEvents(3), 1, await last())).toBe(third);
    // The same question again, or one from a later place before it: the answer stands.
    const asking = asked;
    expect(await next.next(s.partitionEvents(3), 2, await last())).toBe(third);
    expect(asked).toBe(asking);
    // From past it: asked, and the later one found.
    expect(await next.next(s.partitionEvents(3), third + 1, await last())).toBe(third + 1);
    // From before where it was first asked: asked again, still right.
    expect(await next.next(s.partitionEvents(2), 1, await last())).toBe(2);
    expect(await next.next(s.unpartitionedEvents, 1, await last())).toBeUndefined();
    const unpartitioned = await append(`${prefix}.evt.t.e`);
    expect(await next.nextNow(s.unpartitionedEvents, 1)).toBe(unpartitioned);
  });
});

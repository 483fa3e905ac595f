import { headers } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { EVENT_TYPE_HEADER, subjects, uuidv7 } from '@steerline/contracts';
import { connectNats, encodeJson, ensureStream, jetstreamManager } from '@steerline/runtime';
import { startGateway, type RunningGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { jsonLogger } from '../../apps/gateway/src/logger';
import { openSseWatcher } from '../../scripts/bench/sse-watcher';
import { eventually, uniquePrefix } from '../support/env';
import { OwnNatsServer } from '../support/processes';

/**
 * Live event streams across a NATS restart: what was stored while the
 * gateway's connection was away never reached its subscriptions, so each
 * watcher re-reads the log from its position once the connection is back.
 */
describe('event streams across a NATS restart', () => {
  let nats: OwnNatsServer;
  let gateway: RunningGateway | undefined;
  beforeAll(async () => {
    nats = await OwnNatsServer.start();
  });
  afterAll(async () => {
    await gateway?.close();
    await nats?.destroy();
  });

  it('every watcher gets the events stored around the outage exactly once, without reconnecting', async () => {
    const s = subjects(uniquePrefix());
    const nc = await connectNats(nats.url, 'fault-appender');
    try {
      await ensureStream(await jetstreamManager(nc), s);
      const js = jetstream(nc);
      const cid = uuidv7();
      const append = async () => {
        const h = headers();
        h.set(EVENT_TYPE_HEADER, 'Probe');
        return (await js.publish(s.conversationEvents('default', cid), encodeJson({ type: 'Probe' }), { headers: h, timeout: 10_000 })).seq;
      };
      const seqs = [await append()];
      gateway = await startGateway(loadGatewayConfig({ NATS_URL: nats.url, STEERLINE_PREFIX: s.prefix, PORT: '0', STEERLINE_RATE_LIMIT: '0' }), { logger: jsonLogger(['error']) });
      const watchers = await Promise.all(Array.from({ length: 20 }, () => openSseWatcher(`${gateway!.url}/v1/conversations/${cid}/events`)));
      await Promise.all(watchers.map((w) => w.reached(seqs[0])));
      const liveGauge = async () => Number(/^steerline_event_streams_live (\d+)/m.exec(await (await fetch(`${gateway!.url}/metrics`)).text())?.[1]);
      await eventually(async () => ((await liveGauge()) === 20 ? true : undefined));

      await nats.stop('SIGKILL');
      await nats.restart();
      // The appender may be back before the gateway: these can be stored while its subscriptions are not.
      for (let i = 0; i < 5; i++) seqs.push(await eventually(() => append().catch(() => undefined), 20_000, 'an append after the restart'));
      const last = seqs.at(-1)!;
      await Promise.all(watchers.map((w) => eventually(() => ((w.ids.at(-1) ?? 0) >= last ? true : undefined), 20_000, 'a watcher to catch up')));
      for (const w of watchers) {
        expect(w.ended).toBe(false);
        expect(w.ids).toEqual(seqs);
        w.close();
      }
    } finally {
      await nc.close();
    }
  });
});

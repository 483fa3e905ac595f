import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { request, subjects } from '@steerline/contracts';
import { spawnApp, stop } from './processes';
import { pool, rssMiB } from './stats';

/** Resident memory of one engine process holding 1k, then 10k running idle turns. */
export async function measureIdleTurnMemory(opts: { natsUrl: string; prefix: string; nc: NatsConnection; turns: number[] }) {
  const prefix = `${opts.prefix}m`;
  const s = subjects(prefix);
  const { child } = await spawnApp('engine', { NATS_URL: opts.natsUrl, STEERLINE_PREFIX: prefix });
  const call = <T>(subject: string, body: unknown) => request<T>(opts.nc, subject, body, { timeoutMs: 30_000, noResponders: 'unavailable' });
  const model = { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 600_000 } } }] };
  const out: { turns: number; rssMiB: number; startsPerSecond: number }[] = [{ turns: 0, rssMiB: rssMiB(child.pid!), startsPerSecond: 0 }];
  let running = 0;
  try {
    for (const target of opts.turns) {
      const t0 = performance.now();
      const count = target - running;
      await pool(
        Array.from({ length: count }, () => async () => {
          const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
          await call(s.startTurn, { tenantId: 'default', conversationId: id, prompt: 'idle', model });
        }),
        32,
      );
      const startsPerSecond = count / ((performance.now() - t0) / 1000);
      running = target;
      global.gc?.();
      await new Promise((r) => setTimeout(r, 2000));
      out.push({ turns: target, rssMiB: rssMiB(child.pid!), startsPerSecond });
    }
  } finally {
    await stop(child);
    const jsm = await jetstreamManager(opts.nc);
    for (const stream of [s.stream, `KV_${s.turnsBucket}`, `KV_${s.enginesBucket}`]) await jsm.streams.delete(stream).catch(() => undefined);
  }
  return out;
}

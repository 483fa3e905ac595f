import type { NatsConnection } from '@nats-io/transport-node';
import { SteerlineClient } from '@steerline/client';
import { subjects, type RunnerNext } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { measureJetStream, startFloors } from './raw';
import type { Row } from './report';
import { measureBoundary } from './steerline';
import { median, percentile } from './stats';

/** Alternately through the gateway and straight to the engine: (REPS − WARM) / 2 samples each. */
const REPS = 350;
const WARM = 50;
const CANCELS = 40;
const sleepCall = { id: 'call_1_0', name: 'sleep', args: { ms: 1 } };
/** As long as a lease token (32 random bytes, base64url). */
const LEASE_LIKE = 'x'.repeat(43);
const RESULTS = [{ toolCallId: 'call_1_0', ok: true, output: 'slept 1 ms', durationMs: 1 }];

const postJson = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<unknown>);

type P50P99 = { p50: number; p99: number };
const p50p99 = (samples: number[]): P50P99 => ({ p50: median(samples), p99: percentile(samples, 99) });

/**
 * What an external turn adds at a boundary (docs/runner-protocol.md): from the
 * moment its runner sends step 1's tool results until it holds the steers for
 * request 2 (one queued), through the gateway and engine processes — next to
 * the engine's own boundary (tool result in hand → model request sent, one
 * steer queued), a bare HTTP round trip and a JetStream ack measured in the
 * same run. Every other repetition sends the same report straight to the
 * engine over NATS (the subject the gateway forwards it to), without the
 * runner's HTTP round trip and the gateway: what the engine's side of the
 * boundary costs, so the rest is the gateway's. Also: a cancel sent until the
 * runner's signal aborts.
 */
export async function measureExternalBoundary(opts: { gatewayUrl: string; natsUrl: string; prefix: string; nc: NatsConnection }) {
  const client = new SteerlineClient({ baseUrl: opts.gatewayUrl });
  const floors = await startFloors({ natsUrl: opts.natsUrl, prefix: `${opts.prefix}x`, nc: opts.nc });
  const s = subjects(opts.prefix);
  const external: number[] = [];
  const direct: number[] = [];
  const bare: number[] = [];
  const cancels: number[] = [];
  try {
    for (let rep = 0; rep < REPS; rep++) {
      const { id } = await client.createConversation();
      const turn = await client.startExternalTurn(id, { prompt: 'bench' });
      await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
      await client.steer(turn.turnId, 'a steer of ordinary length, about sixty characters');
      const straight = rep % 2 === 1;
      const t0 = performance.now();
      const next = straight
        ? await request<RunnerNext>(opts.nc, s.runnerResults(turn.turnId), { tenantId: 'default', lease: turn.leaseToken, step: 1, results: RESULTS }, { timeoutMs: 10_000, noResponders: 'unavailable' })
        : await turn.reportResults(1, RESULTS);
      const t1 = performance.now();
      if (next.next !== 'model' || next.steers.length !== 1) throw new Error(`the boundary answered ${JSON.stringify(next)}`);
      // The same HTTP work for the client: a POST of the report's JSON, its JSON answer read (a GET was 0.1–0.2 ms less).
      await postJson(floors.bare, { lease: LEASE_LIKE, step: 1, results: RESULTS });
      const t2 = performance.now();
      await turn.reportAnswer({ step: 2, text: 'ok', toolCalls: [] });
      if (rep >= WARM) {
        (straight ? direct : external).push(t1 - t0);
        bare.push(t2 - t1);
      }
    }
    for (let rep = 0; rep < CANCELS; rep++) {
      const { id } = await client.createConversation();
      const turn = await client.startExternalTurn(id, { prompt: 'bench' });
      // A report renews the lease too; by its answer the renewal loop's first long poll is held by the engine.
      await turn.reportAnswer({ step: 1, text: '', toolCalls: [sleepCall] });
      await new Promise((r) => setTimeout(r, 20));
      const aborted = new Promise<number>((resolve) => turn.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }));
      const t0 = performance.now();
      await client.cancel(turn.turnId);
      cancels.push((await aborted) - t0);
    }
  } finally {
    await floors.close();
  }
  let internal: number[] = [];
  await measureBoundary({ natsUrl: opts.natsUrl, prefix: `${opts.prefix}i`, nc: opts.nc, queued: [1], onSamples: (_k, samples) => (internal = samples) });
  const { jsAck } = await measureJetStream(opts.nc, `${opts.prefix}j`, new TextEncoder().encode(JSON.stringify({ text: 'a steer of ordinary length, about sixty characters' })));
  return { external: p50p99(external), direct: p50p99(direct), internal: p50p99(internal), bareHttp: p50p99(bare), jsAck: p50p99(jsAck.slice(200)), cancel: p50p99(cancels) };
}

export function externalBoundaryRows(m: Awaited<ReturnType<typeof measureExternalBoundary>>): Row[] {
  const floor = (k: 'p50' | 'p99') => m.internal[k] + m.bareHttp[k] + m.jsAck[k];
  const floorName = 'internal boundary + HTTP round trip + JS ack';
  return [
    { group: 'raw', name: 'external-turn run: bare node:http round trip (a POST of the report’s JSON, its JSON answer read), p50', value: m.bareHttp.p50, unit: 'ms' },
    { group: 'raw', name: 'external-turn run: JetStream publish → ack, p50', value: m.jsAck.p50, unit: 'ms' },
    { group: 'steerline', name: 'boundary, engine’s own turn, 1 steer queued (tool result → model request sent), p50', value: m.internal.p50, unit: 'ms' },
    { group: 'steerline', name: 'boundary, engine’s own turn, p99', value: m.internal.p99, unit: 'ms' },
    { group: 'steerline', name: 'boundary, external turn, 1 steer queued (runner’s results report → it holds the steers), p50', value: m.external.p50, unit: 'ms', floor: floor('p50'), floorName, target: '≤ 1×' },
    { group: 'steerline', name: 'boundary, external turn, p99', value: m.external.p99, unit: 'ms', floor: floor('p99'), floorName: `${floorName}, p99s` },
    {
      group: 'steerline',
      name: 'same report sent straight to the engine over NATS (no HTTP, no gateway), p50',
      value: m.direct.p50,
      unit: 'ms',
      floor: m.internal.p50 + m.jsAck.p50,
      floorName: 'internal boundary + JS ack',
    },
    { group: 'steerline', name: 'the gateway’s share of that boundary (through the gateway − straight to the engine − bare HTTP round trip), p50', value: m.external.p50 - m.direct.p50 - m.bareHttp.p50, unit: 'ms' },
    { group: 'steerline', name: 'external turn: cancel sent → the runner’s signal aborted, p50', value: m.cancel.p50, unit: 'ms', floor: m.bareHttp.p50, floorName: 'bare HTTP round trip' },
    { group: 'steerline', name: 'external turn: cancel sent → the runner’s signal aborted, p99', value: m.cancel.p99, unit: 'ms' },
  ];
}

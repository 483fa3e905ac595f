import type { NatsConnection } from '@nats-io/transport-node';
import { subjects, type Receipt } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startEngine } from '../../apps/engine/src/app';
import { loadEngineConfig } from '../../apps/engine/src/config';
import type { ModelProvider, ModelRequest } from '../../apps/engine/src/models/model.provider';
import { ScriptedModel } from '../../apps/engine/src/models/scripted.model';
import { BUILTIN_TOOLS } from '../../apps/engine/src/tools/tool.registry';
import { deleteStreams } from './processes';
import { get, post, type Floors, type FloorServers, type RawBaselines } from './raw';
import type { Row } from './report';
import { interleaved, interleavedConcurrently, median, percentile, pool, timeEach } from './stats';

const IDLE = { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 600_000 } } }] };

async function json(res: Response): Promise<any> {
  const body = await res.json();
  if (!res.ok) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** A turn that runs and waits (a 10-minute tool call), steerable meanwhile. */
export async function idleTurn(api: string): Promise<string> {
  const { id } = await json(await fetch(`${api}/conversations`, { method: 'POST' }));
  const turn = await fetch(`${api}/conversations/${id}/turns`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'bench', model: IDLE, limits: { maxQueued: 1000 } }),
  });
  return (await json(turn)).turnId;
}

export const steer = (api: string, tid: string, i: number) =>
  fetch(`${api}/turns/${tid}/steers`, { method: 'POST', headers: { 'content-type': 'application/json', prefer: 'wait=0' }, body: JSON.stringify({ text: `steer number ${i}` }) }).then(json);

/**
 * Steer accept latency through the gateway (`Prefer: wait=0`), one client then 64 at once, in
 * blocks alternating with the floors' (a bare HTTP round trip, the raw pipeline) so that a change
 * in the machine's load between them does not land in the ratios.
 */
export async function measureSteerAccept(gatewayUrl: string, floors: FloorServers) {
  const api = `${gatewayUrl}/v1`;
  // One client steering 40 running turns in turn. The first 1 500 steers warm the processes up (the
  // gateway's median is still falling after 1 000, as its code is optimised), and as many requests
  // warm the floors; the 1 000 measured after them leave each turn 63 steers.
  const few = await pool(Array.from({ length: 40 }, () => () => idleTurn(api)), 8);
  const one = {
    bare: () => get(floors.bare),
    pipeline: () => post(floors.pipeline),
    steer: (i: number) => steer(api, few[i % few.length], i),
  };
  for (const run of Object.values(one)) await timeEach(1500, run);
  const sequential = await interleaved(one, 5, 200);
  const turns = await pool(Array.from({ length: 64 }, () => () => idleTurn(api)), 16);
  const concurrent = await interleavedConcurrently({ pipeline: () => post(floors.pipeline), steer: (c, i) => steer(api, turns[c], i) }, 2, turns.length, 20);
  await pool([...few, ...turns].map((tid) => () => fetch(`${api}/turns/${tid}/cancel`, { method: 'POST' })), 16);
  const p50p99 = (samples: number[]) => ({ p50: median(samples), p99: percentile(samples, 99) });
  const measuredFloors: Floors = { bareHttpMs: p50p99(sequential.bare), pipelineMs: p50p99(sequential.pipeline), pipelineConcurrent: concurrent.pipeline };
  return { sequential: p50p99(sequential.steer), concurrent: concurrent.steer, floors: measuredFloors };
}

/** The raw hops and the floors, then steer accept held against the composed raw pipeline. */
export function floorRows(raw: RawBaselines, accept: Awaited<ReturnType<typeof measureSteerAccept>>): Row[] {
  const floors = accept.floors;
  const pipeline = 'raw pipeline';
  return [
    { group: 'raw', name: 'bare node:http keep-alive round trip, p50', value: floors.bareHttpMs.p50, unit: 'ms' },
    { group: 'raw', name: 'core NATS request/reply, p50', value: raw.natsRequestMs.p50, unit: 'ms' },
    { group: 'raw', name: 'JetStream publish → ack, sequential, p50', value: raw.jsAckMs.p50, unit: 'ms' },
    { group: 'raw', name: 'JetStream publish, 64 acks in flight', value: raw.jsWindowedPerSecond, unit: 'msg/s' },
    { group: 'raw', name: 'PostgreSQL batched INSERT (500 rows/tx)', value: raw.pgBatchedRowsPerSecond, unit: 'rows/s' },
    { group: 'raw', name: 'pipeline: bare HTTP POST → NATS request → bare responder → JS publish, ack → reply, 1 client, p50', value: floors.pipelineMs.p50, unit: 'ms' },
    { group: 'raw', name: 'pipeline, 1 client, p99', value: floors.pipelineMs.p99, unit: 'ms' },
    { group: 'raw', name: 'pipeline, 64 clients, p50', value: floors.pipelineConcurrent.p50, unit: 'ms' },
    { group: 'raw', name: 'pipeline, 64 clients', value: floors.pipelineConcurrent.perSecond, unit: 'req/s' },
    { group: 'steerline', name: 'gateway GET /healthz round trip (its HTTP framework and middleware), p50', value: raw.httpMs.p50, unit: 'ms', floor: floors.bareHttpMs.p50, floorName: 'bare node:http' },
    { group: 'steerline', name: 'steer accept, 1 client, p50', value: accept.sequential.p50, unit: 'ms', floor: floors.pipelineMs.p50, floorName: pipeline, target: '≤ 2×' },
    { group: 'steerline', name: 'steer accept, 1 client, p99', value: accept.sequential.p99, unit: 'ms', floor: floors.pipelineMs.p99, floorName: `${pipeline} p99` },
    { group: 'steerline', name: 'steer accept, 64 clients, p50', value: accept.concurrent.p50, unit: 'ms', floor: floors.pipelineConcurrent.p50, floorName: `${pipeline}, 64 clients` },
    { group: 'steerline', name: 'steer accept, 64 clients, p99', value: accept.concurrent.p99, unit: 'ms' },
    { group: 'steerline', name: 'steers accepted per second, 64 clients', value: accept.concurrent.perSecond, unit: 'steers/s', floor: floors.pipelineConcurrent.perSecond, floorName: `${pipeline}, 64 clients`, target: '≥ 0.5×' },
  ];
}

/**
 * Boundary overhead: from the moment the step's last tool result is in the
 * engine's hands to the moment the next model request is sent, with 0, 1 and 5
 * steers waiting. Measured in an engine in this process (its own prefix), with
 * the built-in `sleep` and the scripted model timed where they hand over.
 */
export async function measureBoundary(opts: { natsUrl: string; prefix: string; nc: NatsConnection }) {
  const prefix = `${opts.prefix}b`;
  const s = subjects(prefix);
  const toolDone = new Map<string, number>();
  const requested = new Map<string, number>();
  const sleep = BUILTIN_TOOLS.find((t) => t.spec.name === 'sleep')!;
  const run = sleep.run.bind(sleep);
  sleep.run = async (args, signal, call) => {
    const out = await run(args, signal, call);
    if (call) toolDone.set(call.turnId, performance.now());
    return out;
  };
  const scripted = new ScriptedModel();
  const timed: ModelProvider = {
    complete(req: ModelRequest, signal: AbortSignal) {
      if (req.step === 2) requested.set(req.messages[req.messages.length - 1].turnId, performance.now());
      return scripted.complete(req, signal);
    },
  };
  const engine = await startEngine({ ...loadEngineConfig({ NATS_URL: opts.natsUrl, STEERLINE_PREFIX: prefix }) }, { logger: false });
  engine.service.models.register('scripted', timed);
  const call = <T>(subject: string, body: unknown) => request<T>(opts.nc, subject, body, { timeoutMs: 10_000, noResponders: 'unavailable' });
  const result: Record<number, number> = {};
  try {
    for (const queued of [0, 1, 5]) {
      const samples: number[] = [];
      // Enough repetitions that the engine's code is warm, as in a busy engine; the first 50 are dropped.
      for (let rep = 0; rep < 200; rep++) {
        const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
        const { turnId } = await call<{ turnId: string }>(s.startTurn, {
          tenantId: 'default',
          conversationId: id,
          prompt: 'bench',
          model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 15 } } }, { text: 'ok' }] },
        });
        for (let i = 0; i < queued; i++) await call<Receipt>(s.turnSteer(turnId), { tenantId: 'default', text: `steer ${i}` });
        const deadline = Date.now() + 5000;
        while (!requested.has(turnId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        if (rep >= 50) samples.push(requested.get(turnId)! - toolDone.get(turnId)!);
      }
      result[queued] = median(samples);
    }
  } finally {
    sleep.run = run;
    await engine.close();
    await deleteStreams(opts.nc, prefix);
  }
  return result;
}

/** End-to-end lag: a steer accepted (its event appended) until the read model answers with it. */
export async function measureProjectionLag(gatewayUrl: string, nc: NatsConnection, prefix: string) {
  const api = `${gatewayUrl}/v1`;
  const s = subjects(prefix);
  const tid = await idleTurn(api);
  const samples: number[] = [];
  for (let i = 0; i < 60; i++) {
    const receipt = (await steer(api, tid, i)) as Receipt;
    const t0 = performance.now();
    for (;;) {
      const found = await request(nc, s.querySteer, { tenantId: 'default', turnId: tid, steerId: receipt.steerId }, { timeoutMs: 5000, noResponders: 'unavailable' }).then(
        () => true,
        () => false,
      );
      if (found) break;
      if (performance.now() - t0 > 5000) throw new Error('the steer never became visible');
    }
    if (i >= 10) samples.push(performance.now() - t0);
  }
  await fetch(`${api}/turns/${tid}/cancel`, { method: 'POST' });
  return { p50: median(samples), p99: percentile(samples, 99) };
}

import type { NatsConnection } from '@nats-io/transport-node';
import { subjects, type Receipt } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startEngine } from '../../apps/engine/src/app';
import { loadEngineConfig } from '../../apps/engine/src/config';
import type { ModelProvider, ModelRequest } from '../../apps/engine/src/models/model.provider';
import { ScriptedModel } from '../../apps/engine/src/models/scripted.model';
import { BUILTIN_TOOLS } from '../../apps/engine/src/tools/tool.registry';
import { deleteStreams } from './processes';
import { median, percentile } from './stats';

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
 * Boundary overhead: from the moment the step's last tool result is in the
 * engine's hands to the moment the next model request is sent, with 0, 1 and 5
 * steers waiting. Measured in an engine in this process (its own prefix), with
 * the built-in `sleep` and the scripted model timed where they hand over.
 */
export async function measureBoundary(opts: { natsUrl: string; prefix: string; nc: NatsConnection; queued?: number[]; onSamples?: (queued: number, samples: number[]) => void }) {
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
    for (const queued of opts.queued ?? [0, 1, 5]) {
      const samples: number[] = [];
      // Enough repetitions that the engine's code is warm, as in a busy engine; the first 50 are dropped.
      for (let rep = 0, late = 0; rep < 200; rep++) {
        const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
        const { turnId } = await call<{ turnId: string }>(s.startTurn, {
          tenantId: 'default',
          conversationId: id,
          prompt: 'bench',
          model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 40 } } }, { text: 'ok' }] },
        });
        // A steer that came after the turn ended (a stall of this busy process longer than the sleep) measures nothing: the repetition is run again, a bounded number of times.
        const steered = await steerAll(queued, (i) => call<Receipt>(s.turnSteer(turnId), { tenantId: 'default', text: `steer ${i}` }));
        if (!steered) {
          if (++late > 20) throw new Error('boundary overhead: the steers came after the turn ended in 20 repetitions');
          rep--;
          continue;
        }
        const deadline = Date.now() + 5000;
        while (!requested.has(turnId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        if (rep >= 50) samples.push(requested.get(turnId)! - toolDone.get(turnId)!);
      }
      result[queued] = median(samples);
      opts.onSamples?.(queued, samples);
    }
  } finally {
    sleep.run = run;
    await engine.close();
    await deleteStreams(opts.nc, prefix);
  }
  return result;
}

/** Sends `count` steers in order; false when the turn had ended before one of them (turn_not_running). */
async function steerAll(count: number, send: (i: number) => Promise<Receipt>): Promise<boolean> {
  for (let i = 0; i < count; i++) {
    const ok = await send(i).then(
      () => true,
      (err: { code?: string }) => {
        if (err.code === 'turn_not_running') return false;
        throw err;
      },
    );
    if (!ok) return false;
  }
  return true;
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

import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjects, type Receipt } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startEngine } from '../../apps/engine/src/app';
import { loadEngineConfig } from '../../apps/engine/src/config';
import type { ModelProvider, ModelRequest } from '../../apps/engine/src/models/model.provider';
import { ScriptedModel } from '../../apps/engine/src/models/scripted.model';
import { BUILTIN_TOOLS } from '../../apps/engine/src/tools/tool.registry';
import { deleteStreams } from './processes';
import { valueIs, type Row } from './report';
import { median, timeEach } from './stats';

const REPS = Number(process.env.BENCH_INTERRUPT_REPS ?? 60);
const WARM = 10;
const TEN_MINUTES = 600_000;

export interface InterruptFigures {
  jsAckMs: number;
  /** Per scenario: urgent steer sent → the model request that carries it; and the abort's own cost (abort → the aborted call settled). */
  stream: { toRequest: number; acceptToRequest: number; abort: number };
  sleep: { toRequest: number; acceptToRequest: number; abort: number };
}

/**
 * An urgent steer's latency (docs/design.md §2, "Urgency") on an engine of its
 * own: during a streamed answer (a scripted answer written over ten minutes)
 * and during a ten-minute `sleep`, next to what aborting the stream or the
 * sleep itself costs and one JetStream ack, all measured in the same run.
 */
export async function measureInterrupt(opts: { natsUrl: string; prefix: string; nc: NatsConnection }): Promise<InterruptFigures> {
  const prefix = `${opts.prefix}i`;
  const s = subjects(prefix);
  const marks = new Map<string, { busy?: number; requested?: number; aborted?: number; settled?: number }>();
  const mark = (turnId: string) => marks.get(turnId) ?? marks.set(turnId, {}).get(turnId)!;
  // The listener goes on before the call's own, so `aborted` is the moment the abort starts.
  // Removed once the call settles: a signal that aborts later (the turn's end) is not this call's abort.
  const timeAbort = (turnId: string, signal: AbortSignal, work: () => Promise<unknown>) => {
    const onAbort = () => (mark(turnId).aborted = performance.now());
    signal.addEventListener('abort', onAbort, { once: true });
    return work().finally(() => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) mark(turnId).settled = performance.now();
    });
  };
  const sleep = BUILTIN_TOOLS.find((t) => t.spec.name === 'sleep')!;
  const run = sleep.run.bind(sleep);
  sleep.run = (args, signal, call) => {
    if (call) mark(call.turnId).busy = performance.now();
    return call ? (timeAbort(call.turnId, signal, () => run(args, signal, call)) as Promise<unknown>) : run(args, signal, call);
  };
  const scripted = new ScriptedModel();
  const timed: ModelProvider = {
    complete(req: ModelRequest, signal: AbortSignal) {
      const turnId = req.messages[0].turnId;
      if (req.step === 2) mark(turnId).requested = performance.now();
      if (req.step !== 1) return scripted.complete(req, signal);
      const onDelta = (text: string) => {
        mark(turnId).busy ??= performance.now();
        req.onDelta?.(text);
      };
      return timeAbort(turnId, signal, () => scripted.complete({ ...req, onDelta }, signal)) as ReturnType<ModelProvider['complete']>;
    },
  };
  const engine = await startEngine({ ...loadEngineConfig({ NATS_URL: opts.natsUrl, STEERLINE_PREFIX: prefix }) }, { logger: false });
  engine.service.models.register('scripted', timed);
  const call = <T>(subject: string, body: unknown) => request<T>(opts.nc, subject, body, { timeoutMs: 10_000, noResponders: 'unavailable' });
  const until = async (ok: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  };
  const words = Array.from({ length: 2000 }, (_, i) => `word${i}`).join(' ');
  const scenario = async (first: unknown) => {
    const toRequest: number[] = [];
    const acceptToRequest: number[] = [];
    const abort: number[] = [];
    for (let rep = 0; rep < REPS; rep++) {
      const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
      const { turnId } = await call<{ turnId: string }>(s.startTurn, { tenantId: 'default', conversationId: id, prompt: 'bench', model: { provider: 'scripted', script: [first, { text: 'ok' }] } });
      await until(() => mark(turnId).busy !== undefined);
      const sent = performance.now();
      await call<Receipt>(s.turnSteer(turnId), { tenantId: 'default', text: 'stop, do this instead', urgency: 'interrupt' });
      const accepted = performance.now();
      await until(() => mark(turnId).requested !== undefined && mark(turnId).settled !== undefined);
      const m = mark(turnId);
      if (rep >= WARM) {
        toRequest.push(m.requested! - sent);
        acceptToRequest.push(m.requested! - accepted);
        abort.push(m.settled! - m.aborted!);
      }
    }
    return { toRequest: median(toRequest), acceptToRequest: median(acceptToRequest), abort: median(abort) };
  };
  try {
    const stream = await scenario({ text: words, delayMs: TEN_MINUTES });
    const sleeping = await scenario({ tool: { name: 'sleep', args: { ms: TEN_MINUTES } } });
    return { jsAckMs: await oneAck(opts.nc, prefix), stream, sleep: sleeping };
  } finally {
    sleep.run = run;
    await engine.close();
    await deleteStreams(opts.nc, prefix);
  }
}

/** One JetStream ack on a stream of its own, median. */
async function oneAck(nc: NatsConnection, prefix: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const stream = `${prefix.toUpperCase()}_ACK`;
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.ack.>`], storage: 'file' as never });
  try {
    const js = jetstream(nc);
    const payload = new TextEncoder().encode('x'.repeat(300));
    return median(await timeEach(500, (i) => js.publish(`${prefix}.ack.c${i % 10}`, payload, { msgID: `ack-${i}` })));
  } finally {
    await jsm.streams.delete(stream);
  }
}

/** Target (issue 33): p50 within 20 ms plus one JetStream ack of the abort's own cost. */
export function interruptRows(f: InterruptFigures): Row[] {
  const rows = (what: string, x: InterruptFigures['stream']): Row[] => [
    {
      group: 'steerline',
      name: `interrupt during ${what}: urgent steer sent → the model request carrying it, p50`,
      value: x.toRequest,
      unit: 'ms',
      floor: x.abort + f.jsAckMs,
      floorName: `abort's own cost + one JS ack`,
      target: valueIs('≤', 20 + x.abort + f.jsAckMs, '≤ 20 ms + floor'),
    },
    { group: 'steerline', name: `interrupt during ${what}: steer accepted (its reply) → that request, p50`, value: x.acceptToRequest, unit: 'ms' },
    { group: 'raw', name: `abort's own cost during ${what} (abort → the call settled), p50`, value: x.abort, unit: 'ms' },
  ];
  return [...rows('a streamed answer', f.stream), ...rows('a ten-minute sleep', f.sleep), { group: 'raw', name: 'one JetStream ack (same run), p50', value: f.jsAckMs, unit: 'ms' }];
}

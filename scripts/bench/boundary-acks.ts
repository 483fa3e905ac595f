import type { NatsConnection, PublishOptions, RequestOptions } from '@nats-io/transport-node';
import { subjects, type Receipt } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { startEngine } from '../../apps/engine/src/app';
import { loadEngineConfig } from '../../apps/engine/src/config';
import type { ModelProvider, ModelRequest } from '../../apps/engine/src/models/model.provider';
import { ScriptedModel } from '../../apps/engine/src/models/scripted.model';
import { BUILTIN_TOOLS } from '../../apps/engine/src/tools/tool.registry';
import { deleteStreams } from './processes';
import { valueIs, type Row } from './report';
import { median } from './stats';

export interface BoundaryCost {
  steers: number;
  /** Messages the engine published to the event log between the tool's result and the next model request. */
  publishes: number;
  /** Of them, those that asked for a JetStream ack (a request on the event subject). */
  acks: number;
  /** Times the log waited for acks one after the other (the engine's own count). */
  ackRounds: number;
}

const REPS = 60;

/**
 * What one tool boundary costs the event log with 0, 1 and 5 steers queued,
 * counted, not inferred from time: an engine in this process, its NATS
 * connection's publishes and requests on event subjects counted between the
 * moment the step's tool result is in the engine's hands and the moment the
 * next model request is sent (medians over the repetitions).
 */
export async function measureBoundaryAcks(opts: { natsUrl: string; prefix: string; nc: NatsConnection }): Promise<BoundaryCost[]> {
  const prefix = `${opts.prefix}a`;
  const s = subjects(prefix);
  const events = `${prefix}.evt.`;
  const counted = { publishes: 0, acks: 0 };
  const at = new Map<string, { publishes: number; acks: number; ackRounds: number }>();
  const costs = new Map<string, { publishes: number; acks: number; ackRounds: number; delivered: number }>();
  const engine = await startEngine({ ...loadEngineConfig({ NATS_URL: opts.natsUrl, STEERLINE_PREFIX: prefix }) }, { logger: false });
  const service = engine.service;
  const log = service.log!;
  // The engine's own connection, instrumented: every publish and request it makes on an event subject.
  const nc = (service as unknown as { nc: NatsConnection }).nc;
  const publish = nc.publish.bind(nc);
  const ask = nc.request.bind(nc);
  // An ack is asked for by a publish with a reply subject (the event log's own ack inbox) or by a request.
  let asking = false;
  nc.publish = (subject: string, payload?: Parameters<NatsConnection['publish']>[1], o?: PublishOptions) => {
    if (subject.startsWith(events)) {
      counted.publishes++;
      if (o?.reply && !asking) counted.acks++;
    }
    return publish(subject, payload, o);
  };
  nc.request = (subject: string, payload?: Parameters<NatsConnection['request']>[1], o?: RequestOptions) => {
    // A request goes out through the connection's publish (counted there, its reply not counted again).
    if (subject.startsWith(events)) counted.acks++;
    asking = true;
    try {
      return ask(subject, payload, o);
    } finally {
      asking = false;
    }
  };
  const snapshot = () => ({ ...counted, ackRounds: log.counts.ackRounds });
  const sleep = BUILTIN_TOOLS.find((t) => t.spec.name === 'sleep')!;
  const run = sleep.run.bind(sleep);
  sleep.run = async (args, signal, call) => {
    const out = await run(args, signal, call);
    if (call) at.set(call.turnId, snapshot());
    return out;
  };
  const scripted = new ScriptedModel();
  const timed: ModelProvider = {
    complete(req: ModelRequest, signal: AbortSignal) {
      const turnId = req.messages[req.messages.length - 1].turnId;
      const before = at.get(turnId);
      if (req.step === 2 && before) {
        const now = snapshot();
        costs.set(turnId, {
          publishes: now.publishes - before.publishes,
          acks: now.acks - before.acks,
          ackRounds: now.ackRounds - before.ackRounds,
          delivered: req.messages.filter((m) => m.role === 'user').length - 1,
        });
      }
      return scripted.complete(req, signal);
    },
  };
  service.models.register('scripted', timed);
  const call = <T>(subject: string, body: unknown) => request<T>(opts.nc, subject, body, { timeoutMs: 10_000, noResponders: 'unavailable' });
  const out: BoundaryCost[] = [];
  try {
    for (const steers of [0, 1, 5]) {
      const samples: { publishes: number; acks: number; ackRounds: number }[] = [];
      for (let rep = 0; rep < REPS; rep++) {
        const { id } = await call<{ id: string }>(s.createConversation, { tenantId: 'default' });
        const { turnId } = await call<{ turnId: string }>(s.startTurn, {
          tenantId: 'default',
          conversationId: id,
          prompt: 'bench',
          // Long enough that every steer is queued before the boundary, even on a loaded machine.
          model: { provider: 'scripted', script: [{ tool: { name: 'sleep', args: { ms: 150 } } }, { text: 'ok' }] },
        });
        for (let i = 0; i < steers; i++) await call<Receipt>(s.turnSteer(turnId), { tenantId: 'default', text: `steer ${i}` });
        const deadline = Date.now() + 10_000;
        while (!costs.has(turnId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        const cost = costs.get(turnId);
        // The first ones warm the code up; a boundary that did not deliver every steer is not this measurement.
        if (cost && rep >= 10 && cost.delivered === steers) samples.push(cost);
      }
      const pick = (k: keyof (typeof samples)[number]) => median(samples.map((x) => x[k]));
      out.push({ steers, publishes: pick('publishes'), acks: pick('acks'), ackRounds: pick('ackRounds') });
    }
  } finally {
    sleep.run = run;
    await engine.close();
    await deleteStreams(opts.nc, prefix);
  }
  return out;
}

/** A boundary's cost in the log as bench rows: at most one ack per batch of steers. */
export function boundaryAckRows(costs: BoundaryCost[]): Row[] {
  return costs.flatMap((c): Row[] => [
    { group: 'steerline', name: `boundary with ${c.steers} steer(s) queued: JetStream acks asked for (${c.publishes} events published, ${c.ackRounds} wait)`, value: c.acks, unit: 'acks', target: valueIs('≤', 1, '≤ 1 ack per batch') },
  ]);
}

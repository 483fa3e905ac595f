import { headers, type NatsConnection } from '@nats-io/transport-node';
import {
  eventVersion,
  encodeEvent,
  EVENT_TYPE_HEADER,
  STEER_ID_HEADER,
  subjects,
  uuidv7,
  type DropReason,
  type SteerlineEvent,
  type Subjects,
} from '@steerline/contracts';
import { connectNats, jetstreamManager, serve } from '@steerline/runtime';
import { startGateway, type RunningGateway } from '../app';
import { loadGatewayConfig } from '../config';
import { jsonLogger } from '../logger';

/**
 * What the gateway's specs share: a gateway on port 0 with its own subject
 * prefix against the real NATS, a second connection that plays the engine and
 * persistence (real responders on real subjects, no mocks), and event builders.
 */
export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

export interface Harness {
  gateway: RunningGateway;
  nc: NatsConnection;
  s: Subjects;
  /** fetch against the gateway, with `Authorization: Bearer <key>` when a key is given. */
  call(path: string, init?: RequestInit & { key?: string }): Promise<Response>;
  postJson(path: string, body: unknown, init?: { key?: string; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

export async function startHarness(env: Record<string, string> = {}): Promise<Harness> {
  const s = subjects(`gwtest_${uuidv7().replace(/-/g, '').slice(-16)}`);
  const gateway = await startGateway(loadGatewayConfig({ NATS_URL, STEERLINE_PREFIX: s.prefix, PORT: '0', ...env }), { logger: jsonLogger(['error']) });
  const nc = await connectNats(NATS_URL, 'gateway-spec');
  const call = (path: string, init: RequestInit & { key?: string } = {}) => {
    const { key, ...rest } = init;
    const h = new Headers(rest.headers);
    if (key) h.set('authorization', `Bearer ${key}`);
    return fetch(`${gateway.url}${path}`, { ...rest, headers: h });
  };
  return {
    gateway,
    nc,
    s,
    call,
    postJson: (path, body, init = {}) =>
      call(path, { method: 'POST', key: init.key, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...init.headers } }),
    async close() {
      await gateway.close();
      const jsm = await jetstreamManager(nc);
      for (const stream of [s.stream, `KV_${s.rateLimitsBucket}`]) await jsm.streams.delete(stream).catch(() => undefined);
      await nc.drain();
    },
  };
}

/**
 * Answers a subject the way the engine or persistence would. The responder is
 * registered on the server before this resolves, or the gateway would rightly
 * hear "no responders".
 */
export async function answer(nc: NatsConnection, subject: string, handler: Parameters<typeof serve>[2]): Promise<ReturnType<typeof serve>> {
  const sub = serve(nc, subject, handler);
  await nc.flush();
  return sub;
}

/** Publishes an event as the engine does: on its conversation's subject, routable by headers. */
export function publishEvent(nc: NatsConnection, s: Subjects, event: SteerlineEvent, steerIdHeader?: string): void {
  const h = headers();
  h.set(EVENT_TYPE_HEADER, event.type);
  const steerId = steerIdHeader ?? ('steerId' in event.data ? event.data.steerId : undefined);
  if (steerId) h.set(STEER_ID_HEADER, steerId);
  nc.publish(s.conversationEvents(event.tenantId, event.conversationId), encodeEvent(event), { headers: h });
}

export interface SteerRef {
  tenantId?: string;
  conversationId: string;
  turnId: string;
  steerId: string;
  text?: string;
}

function envelope(ref: SteerRef) {
  return { id: uuidv7(), version: 1, tenantId: ref.tenantId ?? 'acme', conversationId: ref.conversationId, turnId: ref.turnId, seq: 5, at: new Date().toISOString() };
}

export function delivered(ref: SteerRef): SteerlineEvent {
  const text = ref.text ?? 'steer';
  const data = { steerId: ref.steerId, text, position: 1, step: 1, boundary: 'tool_results' as const, requestStep: 2, afterToolCallIds: ['t1'], rendered: text };
  return { ...envelope(ref), type: 'SteeringDelivered', data };
}

export function dropped(ref: SteerRef, reason: DropReason = 'turn_cancelled'): SteerlineEvent {
  return { ...envelope(ref), version: eventVersion('SteerDropped'), type: 'SteerDropped', data: { steerId: ref.steerId, text: ref.text ?? 'steer', position: 1, reason } };
}

/** Answers are checked field by field; their shapes are the contract's, not re-declared here. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function json(res: Response): Promise<any> {
  return res.json();
}

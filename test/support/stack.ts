import { ConsoleLogger } from '@nestjs/common';
import type { ModelProvider, ModelRequest } from '../../apps/engine/src/models/model.provider';
import { startEngine, type RunningEngine } from '../../apps/engine/src/app';
import { ScriptedModel } from '../../apps/engine/src/models/scripted.model';
import { loadEngineConfig } from '../../apps/engine/src/config';
import { startGateway, type RunningGateway } from '../../apps/gateway/src/app';
import { loadGatewayConfig } from '../../apps/gateway/src/config';
import { startPersistence, type PersistenceApp } from '../../apps/persistence/src/app';
import { loadPersistenceConfig } from '../../apps/persistence/src/config';
import { isTerminalTurnEvent, uuidv7 } from '@steerline/contracts';
import { createLogger, type StoredEvent } from '@steerline/runtime';
import { createTestDatabase, eventually, NATS_URL, openNats, uniquePrefix, type NatsHandle } from './env';

const quiet = () => new ConsoleLogger({ json: true, logLevels: ['error'] });

/** A recording wrapper around a real model provider: what each model request held. */
export class RecordingModel implements ModelProvider {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly inner: ModelProvider) {}
  complete(request: ModelRequest, signal: AbortSignal) {
    this.requests.push({ ...request, messages: request.messages.map((m) => ({ ...m })) });
    return this.inner.complete(request, signal);
  }
}

export interface Stack {
  prefix: string;
  /** The environment the services got: give it to an app started as a process. */
  env: Record<string, string>;
  url: string;
  nats: NatsHandle;
  /** The in-process engine; absent with `engine: false`. */
  engine: RunningEngine;
  gateway: RunningGateway;
  persistence: PersistenceApp;
  model: RecordingModel;
  /** fetch against the gateway's /v1 with a JSON body. */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }>;
  /** Waits until the projector has applied everything in the stream so far. */
  settled(): Promise<void>;
  /** One turn's events in the log, in order. */
  turnEvents(turnId: string): Promise<StoredEvent[]>;
  /** Waits until the turn's terminal event is in the log; resolves with all its events. */
  turnEnded(turnId: string, timeoutMs?: number): Promise<StoredEvent[]>;
  /** Waits until the turn's log holds an event of `type` (whose data passes `where`); resolves with the turn's events. */
  turnHas(turnId: string, type: string, opts?: { where?: (data: any) => boolean; timeoutMs?: number }): Promise<StoredEvent[]>;
  close(): Promise<void>;
}

export interface StackOptions {
  env?: Record<string, string>;
  leaseMs?: number;
  /** false: no engine in this process (a fault test runs engines as processes). */
  engine?: boolean;
  /** Rewrites the fresh database's URL, e.g. to reach it through a proxy. */
  databaseUrl?: (url: string) => string;
}

/** What a test's turn that names no model runs with: a script that answers "done" at once. */
export const TEST_DEFAULT_MODEL = '{"provider":"scripted","script":[]}';

/** `Stack.api` against the gateway at `url`. */
export function apiAt(url: string): Stack['api'] {
  return async (method, path, body, headers = {}) => {
    const res = await fetch(`${url}/v1${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };
}

/** The three services in this process on a fresh stream and database, over real NATS and PostgreSQL. */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const prefix = uniquePrefix();
  const env = { NATS_URL, STEERLINE_PREFIX: prefix, STEERLINE_DEFAULT_MODEL: TEST_DEFAULT_MODEL, ...opts.env };
  const db = await createTestDatabase();
  const nats = await openNats(prefix, env.NATS_URL);
  const persistence = await startPersistence(loadPersistenceConfig({ ...env, DATABASE_URL: opts.databaseUrl?.(db.url) ?? db.url }), { logger: quiet() });
  const engine = opts.engine === false ? undefined : await startEngine({ ...loadEngineConfig(env), leaseMs: opts.leaseMs ?? 5000 }, process.env.STEERLINE_TEST_ENGINE_LOGS ? {} : { logger: false });
  const model = new RecordingModel(new ScriptedModel());
  // Recorded where the engine offers it (not with STEERLINE_SCRIPTED_MODEL=off).
  if (engine?.service.models.has('scripted')) engine.service.models.register('scripted', model);
  const gateway = await startGateway(loadGatewayConfig({ ...env, PORT: '0' }), { logger: createLogger({ level: 'error' }) });
  const url = gateway.url;
  return {
    prefix,
    env,
    url,
    nats,
    engine: engine as RunningEngine,
    gateway,
    persistence,
    model,
    api: apiAt(url),
    async settled() {
      const info = await nats.jsm.streams.info(nats.s.stream);
      await persistence.projector.waitForSeq(info.state.last_seq, 10_000);
    },
    async turnEvents(turnId) {
      return (await nats.readAll()).filter((e) => e.event.turnId === turnId);
    },
    turnEnded(turnId, timeoutMs = 15_000) {
      return eventually(async () => {
        const events = (await nats.readAll()).filter((e) => e.event.turnId === turnId);
        const last = events.at(-1)?.event;
        return last && isTerminalTurnEvent(last) ? events : undefined;
      }, timeoutMs, `turn ${turnId} to end`);
    },
    turnHas(turnId, type, { where = () => true, timeoutMs = 20_000 } = {}) {
      return eventually(async () => {
        const events = (await nats.readAll()).filter((e) => e.event.turnId === turnId);
        return events.some((e) => e.event.type === type && where(e.event.data)) ? events : undefined;
      }, timeoutMs, `${type} in turn ${turnId}`);
    },
    async close() {
      await gateway.close().catch(() => undefined);
      await engine?.close().catch(() => undefined);
      await persistence.close().catch(() => undefined);
      await nats.close();
      await db.drop();
    },
  };
}

/**
 * A steer as a careful client sends it: with its own id, resubmitted after a 503
 * (no answer in time: it may or may not have been accepted) until the answer is
 * definite. Resubmitting the same id is idempotent (docs/design.md §2.11).
 */
export async function steerSafely(stack: Stack, turnId: string, text: string, steerId: string = uuidv7()) {
  let res = await stack.api('POST', `/turns/${turnId}/steers`, { text, steerId });
  for (let retry = 0; res.status === 503 && retry < 5; retry++) res = await stack.api('POST', `/turns/${turnId}/steers`, { text, steerId });
  return { steerId, res };
}

/** Waits until the call's approval request is in the turn's log. */
export function approvalRequested(stack: Stack, turnId: string, toolCallId = 'call_1_0', timeoutMs?: number) {
  return stack.turnHas(turnId, 'ToolApprovalRequested', { where: (d) => d.toolCallId === toolCallId, timeoutMs });
}

/**
 * Approves a call that waits for approval (docs/design.md §9) once its request is in the log. Tests start
 * a turn whose call waits so that its step stays open, however slow the machine, until they approve it.
 */
export async function approve(stack: Stack, turnId: string, toolCallId = 'call_1_0', headers: Record<string, string> = {}) {
  await approvalRequested(stack, turnId, toolCallId);
  expect((await stack.api('POST', `/turns/${turnId}/approvals/${toolCallId}`, { decision: 'approve' }, headers)).status).toBe(200);
}

/**
 * Sends a steer with Prefer: wait=30 while `toolCallId` waits for approval, and approves the call once
 * the steer is queued: the steer surely lands in that call's step. Resolves with the steer's answer.
 */
export async function steerWhileHeld(stack: Stack, turnId: string, text: string, toolCallId = 'call_1_0') {
  await approvalRequested(stack, turnId, toolCallId);
  const answer = stack.api('POST', `/turns/${turnId}/steers`, { text }, { Prefer: 'wait=30' });
  await stack.turnHas(turnId, 'SteerQueued', { where: (d) => d.text === text });
  await approve(stack, turnId, toolCallId);
  return answer;
}

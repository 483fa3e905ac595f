import { execFile, spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjects } from '@steerline/contracts';
import { connectNats, readSubject, jetstreamManager } from '@steerline/runtime';
import { createTestDatabase, eventually } from '../support/env';
import { ServiceProcess } from '../support/processes';
import { SecureNatsServer, type Role } from '../support/secure-nats';

/**
 * Issue 22: the whole product on a NATS server that requires TLS and a user
 * per role with deploy/nats/permissions.conf, and each role held to its own
 * subjects. Every service runs as its own process with its role's user.
 */
const s = subjects('steerline');
const AUDIT = join(__dirname, '../../dist/scripts/audit.js');
const REBUILD = join(__dirname, '../../dist/scripts/rebuild.js');
const TOOL_SERVICE = join(__dirname, '../../dist/examples/tool-service/main.js');

let nats: SecureNatsServer;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
const services: ServiceProcess[] = [];
let toolService: ChildProcess | undefined;
const clients: NatsConnection[] = [];
let api: string;

async function as(role: Role): Promise<NatsConnection> {
  const env = nats.env(role);
  const nc = await connectNats(env.NATS_URL, `test-${role}`, env);
  clients.push(nc);
  return nc;
}

/** Resolves once the server told `nc` it refused `op` on `subject` (a permissions violation). */
function refusal(nc: NatsConnection, op: 'Publish' | 'Subscription', subject: string): Promise<string> {
  return (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'error' && status.error.message.includes(`Permissions Violation for ${op} to "${subject}"`)) return status.error.message;
    }
    throw new Error('connection closed before the refusal');
  })();
}

const lastSeq = async () => (await (await jetstreamManager(await as('consumer'))).streams.info(s.stream)).state.last_seq;

beforeAll(async () => {
  nats = await SecureNatsServer.start();
  db = await createTestDatabase();
  // A rate limit on, so the gateway's shared buckets (KV) run under its permissions too.
  const common = { STEERLINE_PREFIX: 'steerline', DATABASE_URL: db.url, PORT: '0', STEERLINE_RATE_LIMIT: '1000' };
  // The engine first: it creates the stream the others need.
  for (const [app, role] of [['engine', 'engine'], ['persistence', 'persistence'], ['gateway', 'gateway']] as const) {
    const service = new ServiceProcess(app, { ...common, ...nats.env(role) });
    services.push(service);
    const ready = await service.ready(30_000);
    if (app === 'gateway') api = String(/"url":"([^"]+)"/.exec(JSON.stringify(ready))?.[1]);
  }
  // The example tool service (serveTools), as the tools user.
  toolService = spawn(process.execPath, [TOOL_SERVICE], { env: { ...process.env, STEERLINE_PREFIX: 'steerline', ...nats.env('tools') }, stdio: ['ignore', 'pipe', 'inherit'] });
  const toolLines: string[] = [];
  readline.createInterface({ input: toolService.stdout! }).on('line', (l) => toolLines.push(l));
  await eventually(() => (toolLines.some((l) => l.includes('"ready"')) ? true : undefined), 15_000, 'the tool service to be ready');
});

afterAll(async () => {
  for (const nc of clients) await nc.close().catch(() => undefined);
  toolService?.kill('SIGKILL');
  for (const service of services.reverse()) await service.kill();
  await nats?.destroy();
  await db?.drop();
});

describe('NATS with TLS and a user per role (deploy/nats/permissions.conf)', () => {
  let cid: string;

  it('the whole product works with those permissions: a steer is delivered end to end, a remote tool called, the turn read back', async () => {
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${api}/v1${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as any };
    };
    cid = (await call('POST', '/conversations')).body.id;
    // Steered during the sleep (3 s: room for a slow round trip); then a tool of the tool service, over its own user.
    const script = [{ tool: { name: 'sleep', args: { ms: 3000 } } }, { tool: { name: 'word_count', args: { text: 'least privilege works' } } }, { text: 'done' }];
    const turn = await call('POST', `/conversations/${cid}/turns`, { prompt: 'Work securely', model: { provider: 'scripted', script } });
    expect(turn.status).toBe(202);
    const steer = await call('POST', `/turns/${turn.body.turnId}/steers`, { text: 'Mind the permissions' }, { Prefer: 'wait=30' });
    expect(steer.body).toMatchObject({ status: 'delivered' });
    const done = await eventually(async () => {
      const r = await call('GET', `/turns/${turn.body.turnId}`);
      return r.status === 200 && r.body.status === 'completed' ? r.body : undefined;
    }, 20_000, 'the turn to complete and be projected');
    expect(done.status).toBe('completed');
    const consumer = await as('consumer');
    const log = await readSubject(jetstream(consumer), await jetstreamManager(consumer), s.stream, s.conversationEvents('default', cid));
    expect(log.find((e) => e.event.type === 'ToolCallFinished' && e.event.data.name === 'word_count')?.event.data).toMatchObject({ ok: true, output: { words: 3 } });
    const ready = await fetch(`${api}/readyz`);
    expect(ready.status).toBe(200);
    // No service was refused anything it does: the allow lists are complete for what ran.
    expect(nats.log.filter((l) => /Violation/.test(l) && /User "(gateway|engine|persistence|tools)"/.test(l))).toEqual([]);
  });

  it('the audit runs as the consumer role and finds the log clean', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [AUDIT, '--prefix', 'steerline', '--settled'], { env: { ...process.env, ...nats.env('consumer') } });
    expect(stdout).toMatch(/audited \d+ events.*: 0 violation\(s\)/);
  });

  it('the rebuild runs as the persistence role while the service runs', async () => {
    const env = { ...process.env, ...nats.env('persistence'), STEERLINE_PREFIX: 'steerline', DATABASE_URL: db.url, CI: 'true' };
    const { stdout } = await promisify(execFile)(process.execPath, [REBUILD], { env });
    expect(stdout).toContain('rebuild complete');
    expect(nats.log.filter((l) => /Violation/.test(l) && /User "persistence"/.test(l))).toEqual([]);
  });

  it('the gateway user cannot subscribe to the whole log: it listens per conversation', async () => {
    const nc = await as('gateway');
    const whole = refusal(nc, 'Subscription', s.events);
    nc.subscribe(s.events);
    await whole;
    // `stored.*.>` takes both subject forms of a conversation and a tenant's `<tenant>.>`, not the whole republished log.
    const stored = refusal(nc, 'Subscription', s.stored);
    nc.subscribe(s.stored);
    await stored;
  });

  it('the gateway user cannot publish into the event subjects', async () => {
    const nc = await as('gateway');
    const before = await lastSeq();
    const subject = s.conversationEvents('default', cid);
    const refused = refusal(nc, 'Publish', subject);
    nc.publish(subject, JSON.stringify({ type: 'TurnCompleted' }));
    await refused;
    await expect(jetstream(nc).publish(subject, '{}', { timeout: 1_000 })).rejects.toThrow();
    expect(await lastSeq()).toBe(before);
  });

  it('a tool service user cannot read events, use JetStream or send engine commands', async () => {
    const nc = await as('tools');
    const events = refusal(nc, 'Subscription', s.events);
    nc.subscribe(s.events);
    await events;
    const command = refusal(nc, 'Publish', s.createConversation);
    await expect(nc.request(s.createConversation, JSON.stringify({ tenantId: 'default' }), { timeout: 1_000 })).rejects.toThrow();
    await command;
    const js = refusal(nc, 'Publish', '$JS.API.INFO');
    await expect(jetstreamManager(nc, { timeout: 1_000 })).rejects.toThrow();
    await js;
  });

  it('a consumer user reads the events but cannot write them', async () => {
    const nc = await as('consumer');
    const log = await readSubject(jetstream(nc), await jetstreamManager(nc), s.stream, s.conversationEvents('default', cid));
    expect(log.map((e) => e.event.type)).toContain('SteeringDelivered');
    const before = await lastSeq();
    const subject = s.conversationEvents('default', cid);
    const refused = refusal(nc, 'Publish', subject);
    nc.publish(subject, '{}');
    await refused;
    expect(await lastSeq()).toBe(before);
  });

  it('a client without credentials, or with wrong ones, is refused; a service exits at start-up with one clear line', async () => {
    await expect(connectNats(nats.url, 'anonymous', { NATS_TLS_CA: nats.caFile })).rejects.toThrow(/refused no credentials/);
    await expect(connectNats(nats.url, 'intruder', { ...nats.env('engine'), NATS_PASSWORD: 'guess' })).rejects.toThrow(/refused user engine/);
    // Without the CA the server's certificate is not trusted.
    await expect(connectNats(nats.url, 'untrusting', { ...nats.env('engine'), NATS_TLS_CA: '' })).rejects.toThrow(/TLS with NATS/);

    const engine = new ServiceProcess('engine', { STEERLINE_PREFIX: 'steerline', ...nats.env('engine', { NATS_PASSWORD: 'wrong' }) });
    const { code } = await engine.finished;
    expect(code).toBe(1);
    const failures = engine.lines.filter((l) => l.includes('refused'));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/NATS at tls:\/\/127\.0\.0\.1:\d+ refused user engine/);
    expect(failures[0]).not.toContain('wrong');
  });

  it('credentials taken back at run time are logged and make the service unready until they are accepted again', async () => {
    const gateway = services.find((x) => x.app === 'gateway')!;
    expect((await fetch(`${api}/readyz`)).status).toBe(200);
    await nats.rotatePassword('gateway', 'rotated-away');
    const unready = await eventually(async () => {
      const res = await fetch(`${api}/readyz`);
      return res.status === 503 ? ((await res.json()) as { error: { message: string } }) : undefined;
    }, 15_000, 'the gateway to report itself unready');
    expect(JSON.stringify(unready)).toMatch(/NATS refuses the credentials/);
    // Logged asynchronously: the lines may reach the pipe after /readyz says so.
    const refusals = () => gateway.lines.filter((l) => l.includes('NATS refuses this service'));
    await eventually(() => refusals().length > 0 || undefined, 10_000, 'the refusal to be logged');

    await nats.rotatePassword('gateway', undefined);
    await eventually(async () => ((await fetch(`${api}/readyz`)).status === 200 ? true : undefined), 15_000, 'the gateway to be ready again');
    await eventually(() => gateway.lines.some((l) => l.includes('NATS accepts this service')) || undefined, 10_000, 'the acceptance to be logged');
    expect(refusals()).toHaveLength(1);
  });
});

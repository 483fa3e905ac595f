import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createUser } from '@nats-io/nkeys';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats, jetstreamManager } from '@steerline/runtime';
import { uniquePrefix } from '../support/env';
import { freePort, ServiceProcess, waitForPort } from '../support/processes';

/**
 * NKEY authentication against a real nats-server that knows users only by
 * their public NKEY: the seed, in a file, is all a service is given.
 */
describe('NATS NKEY authentication (NATS_NKEY_SEED_FILE, NATS_CREDS with a seed)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'steerline-nkey-'));
  const allowed = createUser();
  const stranger = createUser();
  const seedFile = join(dir, 'service.nk');
  const strangerFile = join(dir, 'stranger.nk');
  let server: ChildProcess;
  let url: string;
  const opened: NatsConnection[] = [];

  beforeAll(async () => {
    writeFileSync(seedFile, `${new TextDecoder().decode(allowed.getSeed())}\n`, { mode: 0o600 });
    writeFileSync(strangerFile, new TextDecoder().decode(stranger.getSeed()), { mode: 0o600 });
    const port = await freePort();
    writeFileSync(
      join(dir, 'server.conf'),
      [`listen: "127.0.0.1:${port}"`, `jetstream { store_dir: "${join(dir, 'js')}" }`, `authorization { users = [ { nkey: "${allowed.getPublicKey()}" } ] }`].join('\n'),
    );
    const binary = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find(existsSync) ?? 'nats-server';
    server = spawn(binary, ['-c', join(dir, 'server.conf')], { stdio: 'ignore' });
    await waitForPort(port);
    url = `nats://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await Promise.all(opened.map((nc) => nc.close().catch(() => undefined)));
    server?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('a connection with the seed file is let in and can use JetStream; NATS_CREDS holding a bare seed works the same', async () => {
    for (const env of [{ NATS_NKEY_SEED_FILE: seedFile }, { NATS_CREDS: seedFile }]) {
      const nc = await connectNats(url, 'nkey-test', env);
      opened.push(nc);
      const info = await (await jetstreamManager(nc)).getAccountInfo();
      expect(info.limits).toBeDefined();
    }
  });

  it('another key’s seed is refused with an error that names the seed file, not the seed', async () => {
    const err = await connectNats(url, 'nkey-test', { NATS_NKEY_SEED_FILE: strangerFile }).then(
      (nc) => (opened.push(nc), undefined),
      (e: Error) => e,
    );
    expect(err?.message).toContain(strangerFile);
    expect(err?.message).not.toContain(new TextDecoder().decode(stranger.getSeed()));
  });

  it('an engine given only the seed file starts, creates its stream and is ready', async () => {
    const prefix = uniquePrefix();
    const engine = new ServiceProcess('engine', { NATS_URL: url, NATS_NKEY_SEED_FILE: seedFile, STEERLINE_PREFIX: prefix });
    try {
      await engine.ready(60_000);
      const nc = await connectNats(url, 'nkey-check', { NATS_NKEY_SEED_FILE: seedFile });
      opened.push(nc);
      const stream = await (await jetstreamManager(nc)).streams.info(`${prefix.toUpperCase()}_EVENTS`);
      expect(stream.config.subjects).toEqual([`${prefix}.evt.>`]);
    } finally {
      await engine.kill();
    }
  });
});

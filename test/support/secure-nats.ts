import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitForPort } from './processes';

const ROOT = join(__dirname, '../..');
export const ROLES = ['gateway', 'engine', 'persistence', 'tools', 'consumer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * A nats-server of the test's own running deploy/nats/permissions.conf (one
 * user per role) behind TLS, with a CA and server certificate made by the
 * openssl CLI for this run only.
 */
export class SecureNatsServer {
  private readonly passwords = Object.fromEntries(ROLES.map((r) => [r, `pw-${r}-${Math.random().toString(36).slice(2)}`])) as Record<Role, string>;
  readonly log: string[] = [];

  private constructor(
    private readonly dir: string,
    readonly port: number,
  ) {}

  private child!: ChildProcess;

  static async start(): Promise<SecureNatsServer> {
    const dir = mkdtempSync(join(tmpdir(), 'steerline-secure-nats-'));
    makeCertificates(dir);
    copyFileSync(join(ROOT, 'deploy/nats/permissions.conf'), join(dir, 'permissions.conf'));
    const port = await freePort();
    writeFileSync(
      join(dir, 'server.conf'),
      [
        `listen: "127.0.0.1:${port}"`,
        `jetstream { store_dir: "${join(dir, 'js')}" }`,
        `tls { cert_file: "${join(dir, 'server.pem')}", key_file: "${join(dir, 'server.key')}", timeout: 2 }`,
        'include ./permissions.conf',
      ].join('\n'),
    );
    const binary = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find(existsSync) ?? 'nats-server';
    const server = new SecureNatsServer(dir, port);
    const env = { ...process.env, ...Object.fromEntries(ROLES.map((r) => [`STEERLINE_NATS_${r.toUpperCase()}_PASSWORD`, server.passwords[r]])) };
    const child = spawn(binary, ['-c', join(dir, 'server.conf')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const s of [child.stdout!, child.stderr!]) s.on('data', (d: Buffer) => server.log.push(...d.toString().split('\n').filter(Boolean)));
    server.child = child;
    await waitForPort(port).catch((err: Error) => {
      throw new Error(`${err.message}: nats-server said\n${server.log.join('\n')}`);
    });
    return server;
  }

  get url(): string {
    return `tls://127.0.0.1:${this.port}`;
  }

  get caFile(): string {
    return join(this.dir, 'ca.pem');
  }

  /** What a process of `role` gets: the URL, the CA, its user and inbox prefix. */
  env(role: Role, overrides: Record<string, string> = {}): Record<string, string> {
    return { NATS_URL: this.url, NATS_TLS_CA: this.caFile, NATS_USER: role, NATS_PASSWORD: this.passwords[role], NATS_INBOX_PREFIX: `_INBOX.${role}`, ...overrides };
  }

  /**
   * Changes a role's password on the running server (its configuration
   * rewritten and reloaded, as an operator rotating it would); undefined
   * restores the one its services were given.
   */
  async rotatePassword(role: Role, password: string | undefined): Promise<void> {
    const file = join(this.dir, 'permissions.conf');
    const variable = `$STEERLINE_NATS_${role.toUpperCase()}_PASSWORD`;
    const text = readFileSync(join(ROOT, 'deploy/nats/permissions.conf'), 'utf8');
    writeFileSync(file, password === undefined ? text : text.replace(variable, JSON.stringify(password)));
    const reloads = this.log.filter((l) => l.includes('Reloaded server configuration')).length;
    this.child.kill('SIGHUP');
    const deadline = Date.now() + 10_000;
    while (this.log.filter((l) => l.includes('Reloaded server configuration')).length === reloads) {
      if (Date.now() > deadline) throw new Error(`nats-server did not reload:\n${this.log.slice(-10).join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async destroy(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A CA and a server certificate for 127.0.0.1/localhost, valid for a day. */
function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=steerline-test-ca');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '1', '-extfile', 'ext.cnf');
  if (!readFileSync(join(dir, 'server.pem'), 'utf8').includes('BEGIN CERTIFICATE')) throw new Error('openssl made no server certificate');
}

import { readFileSync } from 'node:fs';
import {
  AuthorizationError,
  credsAuthenticator,
  nkeyAuthenticator,
  UserAuthenticationExpiredError,
  type Authenticator,
  type NatsConnection,
  type NodeConnectionOptions,
  type TlsOptions,
} from '@nats-io/transport-node';

/**
 * The one place the environment becomes NATS connection security, for every
 * service, the tool and consumer kits' own programs, the bench, audit and
 * rebuild (docs/design.md §19):
 *
 * - `NATS_USER` + `NATS_PASSWORD`, or `NATS_TOKEN`, or `NATS_CREDS` (a JWT
 *   `.creds` file, or a file holding an NKEY seed), or `NATS_NKEY_SEED_FILE`:
 *   at most one of these;
 * - TLS: `NATS_TLS_CA` (the CA to trust instead of the system's),
 *   `NATS_TLS_CERT` + `NATS_TLS_KEY` (a client certificate), or simply a
 *   `tls://` URL in NATS_URL (TLS required, system CAs).
 *
 * Files are read once, here, so a missing file is a start-up error.
 */
export class NatsConfigError extends Error {
  override readonly name = 'NatsConfigError';
}

type Env = Record<string, string | undefined>;

export function natsSecurityOptions(url: string, env: Env = process.env): Pick<NodeConnectionOptions, 'user' | 'pass' | 'token' | 'authenticator' | 'tls'> {
  const set = (name: string) => (env[name] ?? '') !== '';
  const methods = [
    set('NATS_USER') || set('NATS_PASSWORD') ? 'NATS_USER/NATS_PASSWORD' : '',
    set('NATS_TOKEN') ? 'NATS_TOKEN' : '',
    set('NATS_CREDS') ? 'NATS_CREDS' : '',
    set('NATS_NKEY_SEED_FILE') ? 'NATS_NKEY_SEED_FILE' : '',
  ].filter(Boolean);
  if (methods.length > 1) throw new NatsConfigError(`set one way to authenticate to NATS, not ${methods.join(' and ')}`);
  const out: Pick<NodeConnectionOptions, 'user' | 'pass' | 'token' | 'authenticator' | 'tls'> = {};
  if (set('NATS_USER') || set('NATS_PASSWORD')) {
    if (!set('NATS_USER') || !set('NATS_PASSWORD')) throw new NatsConfigError('NATS_USER and NATS_PASSWORD go together');
    out.user = env.NATS_USER;
    out.pass = env.NATS_PASSWORD;
  }
  if (set('NATS_TOKEN')) out.token = env.NATS_TOKEN;
  if (set('NATS_CREDS')) out.authenticator = credsFile(env.NATS_CREDS!);
  if (set('NATS_NKEY_SEED_FILE')) out.authenticator = nkeyAuthenticator(new TextEncoder().encode(readSecret(env.NATS_NKEY_SEED_FILE!, 'NATS_NKEY_SEED_FILE').trim()));

  if (set('NATS_TLS_CERT') !== set('NATS_TLS_KEY')) throw new NatsConfigError('NATS_TLS_CERT and NATS_TLS_KEY go together');
  const tls: TlsOptions = {};
  if (set('NATS_TLS_CA')) tls.ca = readSecret(env.NATS_TLS_CA!, 'NATS_TLS_CA');
  if (set('NATS_TLS_CERT')) {
    tls.cert = readSecret(env.NATS_TLS_CERT!, 'NATS_TLS_CERT');
    tls.key = readSecret(env.NATS_TLS_KEY!, 'NATS_TLS_KEY');
  }
  // An empty object asks for TLS with the system's CAs: what a tls:// URL means.
  if (Object.keys(tls).length > 0 || url.split(',').some((u) => u.trim().startsWith('tls://'))) out.tls = tls;
  return out;
}

/** A `.creds` file (JWT and seed) or a file holding only an NKEY seed: NKEY seeds go the same way. */
function credsFile(path: string): Authenticator {
  const text = readSecret(path, 'NATS_CREDS');
  const encoded = new TextEncoder().encode(text);
  if (text.includes('BEGIN NATS USER JWT')) return credsAuthenticator(encoded);
  return nkeyAuthenticator(new TextEncoder().encode(text.trim()));
}

function readSecret(path: string, variable: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new NatsConfigError(`${variable}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** Which identity the environment connects as, for messages (never the secret). */
export function natsIdentity(env: Env = process.env): string {
  if (env.NATS_USER) return `user ${env.NATS_USER}`;
  if (env.NATS_TOKEN) return 'a token';
  if (env.NATS_CREDS) return `credentials ${env.NATS_CREDS}`;
  if (env.NATS_NKEY_SEED_FILE) return `the NKEY seed in ${env.NATS_NKEY_SEED_FILE}`;
  return 'no credentials';
}

/**
 * A first connection that failed, said in one line an operator can act on:
 * a refusal of the credentials is never retried (it would only hide them).
 */
export function describeConnectFailure(err: unknown, url: string, env: Env = process.env): NatsConfigError {
  const message = err instanceof Error ? err.message : String(err);
  const redacted = redactUrl(url);
  if (err instanceof AuthorizationError || /authorization violation|authentication/i.test(message)) {
    return new NatsConfigError(`NATS at ${redacted} refused ${natsIdentity(env)} (${message}): check NATS_USER/NATS_PASSWORD, NATS_TOKEN, NATS_CREDS or NATS_NKEY_SEED_FILE`);
  }
  if (/tls|ssl|certificate|self.signed|CERT_|handshake/i.test(message)) {
    return new NatsConfigError(`TLS with NATS at ${redacted} failed (${message}): check NATS_TLS_CA, NATS_TLS_CERT, NATS_TLS_KEY or the tls:// URL`);
  }
  return new NatsConfigError(`cannot connect to NATS at ${redacted}: ${message}`);
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/g, '//***@');
}

const authProblems = new WeakMap<NatsConnection, string>();

/**
 * Why NATS currently refuses this connection's credentials (expired, revoked,
 * changed), or undefined while it accepts them: readiness is false meanwhile.
 */
export function natsAuthProblem(nc: NatsConnection): string | undefined {
  return authProblems.get(nc);
}

/**
 * Watches a live connection for the server taking its credentials back or
 * refusing it a subject, and says so once in the log; the client keeps
 * reconnecting, so renewed credentials bring the service back by themselves.
 */
export function watchNatsAuth(nc: NatsConnection, name: string, log: (record: Record<string, unknown>) => void = logLine): void {
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'error') {
        const error = status.error;
        const auth = error instanceof AuthorizationError || error instanceof UserAuthenticationExpiredError || /authorization violation|authentication/i.test(error.message);
        if (auth) {
          if (!authProblems.has(nc)) log({ level: 'error', context: name, message: 'NATS refuses this service\'s credentials; not ready until it accepts them again', error: error.message });
          authProblems.set(nc, error.message);
        } else if (/permissions violation/i.test(error.message)) {
          log({ level: 'error', context: name, message: 'NATS denied this service a subject: its permissions (deploy/nats/) lack it', error: error.message });
        }
      } else if (status.type === 'reconnect' && authProblems.has(nc)) {
        authProblems.delete(nc);
        log({ level: 'log', context: name, message: 'NATS accepts this service\'s credentials again' });
      }
    }
  })().catch(() => undefined);
}

function logLine(record: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify(record)}\n`);
}

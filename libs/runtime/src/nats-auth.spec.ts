import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nkeys } from '@nats-io/transport-node';
import { describeConnectFailure, natsSecurityOptions, NatsConfigError } from './nats-auth';

const dir = mkdtempSync(join(tmpdir(), 'steerline-nats-auth-'));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

describe('NATS connection security from the environment', () => {
  it('no variables: a plain connection; a tls:// URL asks for TLS with the system CAs', () => {
    expect(natsSecurityOptions('nats://127.0.0.1:4222', {})).toEqual({});
    expect(natsSecurityOptions('tls://nats.example:4222', {})).toEqual({ tls: {} });
  });

  it('user and password, token, CA and client certificate', () => {
    expect(natsSecurityOptions('nats://x', { NATS_USER: 'engine', NATS_PASSWORD: 'pw' })).toEqual({ user: 'engine', pass: 'pw' });
    expect(natsSecurityOptions('nats://x', { NATS_TOKEN: 't0k' })).toEqual({ token: 't0k' });
    const tls = natsSecurityOptions('nats://x', { NATS_TLS_CA: file('ca.pem', 'CA'), NATS_TLS_CERT: file('c.pem', 'CERT'), NATS_TLS_KEY: file('k.pem', 'KEY') });
    expect(tls).toEqual({ tls: { ca: 'CA', cert: 'CERT', key: 'KEY' } });
  });

  it('an NKEY seed, from NATS_NKEY_SEED_FILE or NATS_CREDS, becomes an authenticator', () => {
    const seed = new TextDecoder().decode(nkeys.createUser().getSeed());
    expect(natsSecurityOptions('nats://x', { NATS_NKEY_SEED_FILE: file('seed.nk', `${seed}\n`) }).authenticator).toEqual(expect.any(Function));
    expect(natsSecurityOptions('nats://x', { NATS_CREDS: file('user.nk', seed) }).authenticator).toEqual(expect.any(Function));
  });

  it('refuses half or conflicting settings and unreadable files, naming the variable', () => {
    expect(() => natsSecurityOptions('nats://x', { NATS_USER: 'engine' })).toThrow('NATS_USER and NATS_PASSWORD go together');
    expect(() => natsSecurityOptions('nats://x', { NATS_USER: 'a', NATS_PASSWORD: 'b', NATS_TOKEN: 'c' })).toThrow(/one way to authenticate/);
    expect(() => natsSecurityOptions('nats://x', { NATS_TLS_CERT: file('c2.pem', 'CERT') })).toThrow('NATS_TLS_CERT and NATS_TLS_KEY go together');
    expect(() => natsSecurityOptions('nats://x', { NATS_CREDS: join(dir, 'missing.creds') })).toThrow(NatsConfigError);
    expect(() => natsSecurityOptions('nats://x', { NATS_CREDS: join(dir, 'missing.creds') })).toThrow(/NATS_CREDS: cannot read .*ENOENT/);
  });

  it('a refused first connection is one line saying what to check, without the secret', () => {
    const err = describeConnectFailure(new Error('Authorization Violation'), 'nats://u:secret@h:4222', { NATS_USER: 'gateway', NATS_PASSWORD: 'secret' });
    expect(err.message).toBe('NATS at nats://***@h:4222 refused user gateway (Authorization Violation): check NATS_USER/NATS_PASSWORD, NATS_TOKEN, NATS_CREDS or NATS_NKEY_SEED_FILE');
    expect(describeConnectFailure(new Error('self-signed certificate'), 'tls://h:4222', {}).message).toMatch(/^TLS with NATS at tls:\/\/h:4222 failed/);
  });
});

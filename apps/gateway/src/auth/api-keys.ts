import { createHash, timingSafeEqual } from 'node:crypto';
import { SteerlineError } from '@steerline/contracts';

/** The tenant of an open deployment (STEERLINE_API_KEYS unset). */
export const OPEN_TENANT = 'default';

// Tenants become NATS subject tokens and event fields, so they follow the
// contract's tenantId rule.
const TENANT = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Parses `key:tenant,…`. A key may itself contain ':' (the tenant is what
 * follows the last one). An explicitly empty list is refused rather than read
 * as "no auth": a blank variable is far more often a deployment mistake than
 * a wish to open the API.
 */
export function parseApiKeys(value: string): ReadonlyMap<string, string> {
  const keys = new Map<string, string>();
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const colon = entry.lastIndexOf(':');
    const key = colon > 0 ? entry.slice(0, colon).trim() : '';
    const tenant = colon > 0 ? entry.slice(colon + 1).trim() : '';
    if (!key || !TENANT.test(tenant)) throw new Error('entries must be key:tenant, tenant being 1-64 letters, digits, "_" or "-"');
    const known = keys.get(key);
    if (known !== undefined && known !== tenant) throw new Error('lists one key for two tenants');
    keys.set(key, tenant);
  }
  if (keys.size === 0) throw new Error('is set but lists no keys (unset it to run without auth)');
  return keys;
}

/**
 * Parses an API keys file (STEERLINE_API_KEYS_FILE): one `sha256:<hex> tenant`
 * per line, the SHA-256 of the key in hex, so the file holds no key itself;
 * blank lines and `#` comments are ignored. Returns tenant by digest.
 */
export function parseApiKeyFile(text: string): ReadonlyMap<string, string> {
  const digests = new Map<string, string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^sha256:([0-9a-fA-F]{64})\s+(\S+)$/.exec(line);
    if (!match || !TENANT.test(match[2])) throw new Error(`line ${i + 1} is not "sha256:<64 hex digits> <tenant>"`);
    const digest = match[1].toLowerCase();
    const known = digests.get(digest);
    if (known !== undefined && known !== match[2]) throw new Error(`line ${i + 1} gives one key to two tenants`);
    digests.set(digest, match[2]);
  });
  return digests;
}

/**
 * Resolves the tenant of a request. Keys are held as SHA-256 digests and a
 * presented key's digest is compared with every one of them in constant time,
 * so how long a check takes says nothing about how close a guess was.
 * `replace` swaps the keys at run time (the keys file reloaded on SIGHUP).
 */
export class ApiKeys {
  private entries: { digest: Buffer; tenant: string }[] | undefined;

  /** `keys` by the key itself (STEERLINE_API_KEYS), `digests` by its SHA-256 in hex (the keys file). */
  constructor(keys: ReadonlyMap<string, string> | undefined, digests?: ReadonlyMap<string, string>) {
    this.replace(keys, digests);
  }

  replace(keys: ReadonlyMap<string, string> | undefined, digests?: ReadonlyMap<string, string>): void {
    if (keys === undefined && digests === undefined) {
      this.entries = undefined;
      return;
    }
    const all = new Map<string, string>(digests ?? []);
    for (const [key, tenant] of keys ?? []) all.set(digest(key), tenant);
    this.entries = [...all].map(([hex, tenant]) => ({ digest: Buffer.from(hex, 'hex'), tenant }));
  }

  get open(): boolean {
    return this.entries === undefined;
  }

  get size(): number {
    return this.entries?.length ?? 0;
  }

  tenantFor(authorization: string | undefined): string {
    return this.identify(authorization).tenantId;
  }

  /**
   * The tenant and a stable, non-secret id of the key (a digest prefix, for
   * rate limiting per key); `keyId` is undefined when the API is open.
   */
  identify(authorization: string | undefined): { tenantId: string; keyId?: string } {
    if (!this.entries) return { tenantId: OPEN_TENANT };
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
    if (!match) throw new SteerlineError('unauthorized', 'an Authorization: Bearer <API key> header is required');
    const presented = Buffer.from(digest(match[1]), 'hex');
    let tenantId: string | undefined;
    // Every entry is compared, with no early exit.
    for (const entry of this.entries) if (timingSafeEqual(entry.digest, presented) && tenantId === undefined) tenantId = entry.tenant;
    if (tenantId === undefined) throw new SteerlineError('unauthorized', 'the API key is not valid');
    return { tenantId, keyId: presented.toString('hex').slice(0, 16) };
  }
}

export function digest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

import { createHash } from 'node:crypto';
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
 * Resolves the tenant of a request. Keys are looked up by their SHA-256, so
 * how long a lookup takes says nothing about how much of a guess was right.
 */
export class ApiKeys {
  private readonly byDigest: ReadonlyMap<string, string> | undefined;

  constructor(keys: ReadonlyMap<string, string> | undefined) {
    this.byDigest = keys && new Map([...keys].map(([key, tenant]) => [digest(key), tenant]));
  }

  get open(): boolean {
    return this.byDigest === undefined;
  }

  tenantFor(authorization: string | undefined): string {
    return this.identify(authorization).tenantId;
  }

  /**
   * The tenant and a stable, non-secret id of the key (a digest prefix, for
   * rate limiting per key); `keyId` is undefined when the API is open.
   */
  identify(authorization: string | undefined): { tenantId: string; keyId?: string } {
    if (!this.byDigest) return { tenantId: OPEN_TENANT };
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
    if (!match) throw new SteerlineError('unauthorized', 'an Authorization: Bearer <API key> header is required');
    const keyDigest = digest(match[1]);
    const tenantId = this.byDigest.get(keyDigest);
    if (tenantId === undefined) throw new SteerlineError('unauthorized', 'the API key is not valid');
    return { tenantId, keyId: keyDigest.slice(0, 16) };
  }
}

function digest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

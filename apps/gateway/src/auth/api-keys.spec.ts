import { createHash } from 'node:crypto';
import { SteerlineError } from '@steerline/contracts';
import { ApiKeys, parseApiKeyFile } from './api-keys';

const sha = (key: string) => createHash('sha256').update(key).digest('hex');

describe('API keys file', () => {
  it('reads `sha256:<hex> tenant` lines, skipping blanks and comments', () => {
    const keys = parseApiKeyFile(`# ops\n\nsha256:${sha('a')} acme\n  sha256:${sha('b').toUpperCase()}   beta  \n`);
    expect([...keys]).toEqual([
      [sha('a'), 'acme'],
      [sha('b'), 'beta'],
    ]);
  });

  it('names the line that is wrong', () => {
    expect(() => parseApiKeyFile(`sha256:${sha('a')} acme\nplain-key acme\n`)).toThrow(/line 2/);
    expect(() => parseApiKeyFile(`sha256:abc acme\n`)).toThrow(/line 1/);
    expect(() => parseApiKeyFile(`sha256:${sha('a')} bad.tenant\n`)).toThrow(/line 1/);
    expect(() => parseApiKeyFile(`sha256:${sha('a')} acme\nsha256:${sha('a')} beta\n`)).toThrow(/two tenants/);
  });

  it('resolves keys given in plain and hashed together; replace swaps them', () => {
    const keys = new ApiKeys(new Map([['plain', 'acme']]), new Map([[sha('hashed'), 'beta']]));
    expect(keys.tenantFor('Bearer plain')).toBe('acme');
    expect(keys.tenantFor('Bearer hashed')).toBe('beta');
    expect(() => keys.tenantFor('Bearer other')).toThrow(SteerlineError);
    keys.replace(undefined, new Map([[sha('next'), 'gamma']]));
    expect(keys.tenantFor('Bearer next')).toBe('gamma');
    expect(() => keys.tenantFor('Bearer plain')).toThrow(/not valid/);
    expect(new ApiKeys(undefined).tenantFor(undefined)).toBe('default');
    // A keys file that lists nobody closes the API; it does not open it.
    expect(() => new ApiKeys(undefined, new Map()).tenantFor('Bearer x')).toThrow(/not valid/);
  });
});

import { boundOutput, truncateText, truncationMarker } from './output-bound';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

describe('bounded outputs', () => {
  it('leaves text within the limit as it is', () => {
    expect(truncateText('short', 1024)).toBe('short');
    expect(truncateText('é'.repeat(512), 1024)).toBe('é'.repeat(512));
  });

  it('cuts a 5 MB text to the limit and says how large it was', () => {
    const cut = truncateText('x'.repeat(5 * 1024 * 1024), 262_144);
    expect(cut.endsWith('… [truncated: 5 242 880 bytes, limit 262 144]')).toBe(true);
    expect(bytes(cut)).toBeLessThanOrEqual(262_144);
    expect(bytes(cut)).toBeGreaterThan(262_144 - 64);
  });

  it('never splits a character, whatever its width', () => {
    for (const ch of ['é', '中', '😀']) {
      for (let limit = 100; limit < 108; limit++) {
        const cut = truncateText(ch.repeat(200), limit);
        expect(bytes(cut)).toBeLessThanOrEqual(limit);
        const head = cut.slice(0, cut.indexOf('…'));
        expect(head).toBe(ch.repeat(head.length / ch.length));
        expect(cut).not.toContain('\ufffd');
      }
    }
  });

  it('turns a too-large JSON value into its cut JSON text, and keeps small values', () => {
    expect(boundOutput({ a: 1 }, 1024)).toEqual({ a: 1 });
    expect(boundOutput(42, 1)).toBe(42);
    expect(boundOutput(null, 1)).toBeNull();
    const big = { rows: Array.from({ length: 1000 }, (_, i) => ({ i, text: 'row' })) };
    const cut = boundOutput(big, 2048) as string;
    expect(typeof cut).toBe('string');
    expect(cut.startsWith('{"rows":[{"i":0')).toBe(true);
    expect(cut.endsWith(truncationMarker(bytes(JSON.stringify(big)), 2048))).toBe(true);
    expect(bytes(cut)).toBeLessThanOrEqual(2048);
  });
});

import { firstLost, missingRanges, prefixBefore } from './continuity';

describe('missingRanges', () => {
  it('is empty for a batch that continues right after the checkpoint', () => {
    expect(missingRanges(10, [11, 12, 13])).toEqual([]);
  });

  it('names the sequences between the checkpoint and the batch', () => {
    expect(missingRanges(10, [13, 14])).toEqual([{ from: 11, to: 12 }]);
  });

  it('names holes inside the batch, in order', () => {
    expect(missingRanges(0, [1, 3, 4, 8])).toEqual([
      { from: 2, to: 2 },
      { from: 5, to: 7 },
    ]);
  });

  it('ignores redeliveries at or below the checkpoint and messages out of order', () => {
    expect(missingRanges(10, [9, 10, 12, 11])).toEqual([]);
    expect(missingRanges(10, [8, 9])).toEqual([]);
  });

  it('is empty for an empty batch', () => {
    expect(missingRanges(10, [])).toEqual([]);
  });
});

describe('firstLost', () => {
  /** A stream holding exactly these sequences. */
  const stream = (...stored: number[]) => async (from: number) => stored.find((seq) => seq >= from);

  it('is the first missing sequence the stream still holds', async () => {
    expect(await firstLost([{ from: 2, to: 2 }, { from: 5, to: 7 }], stream(1, 3, 4, 6, 7, 8))).toBe(6);
  });

  it('is undefined when the missing sequences were removed by the stream (below its first, or deleted)', async () => {
    expect(await firstLost([{ from: 1, to: 99 }], stream(100, 101))).toBeUndefined();
    expect(await firstLost([{ from: 5, to: 6 }], stream(4, 7))).toBeUndefined();
    expect(await firstLost([{ from: 5, to: 6 }], stream())).toBeUndefined();
  });

  it('asks the stream once per range and stops at the first loss', async () => {
    const asked: number[] = [];
    const lookup = stream(3, 9);
    const lost = await firstLost([{ from: 2, to: 4 }, { from: 6, to: 7 }], async (from) => (asked.push(from), lookup(from)));
    expect(lost).toBe(3);
    expect(asked).toEqual([2]);
  });
});

describe('prefixBefore', () => {
  it('counts the messages before the lost sequence', () => {
    expect(prefixBefore([11, 12, 15, 16], 13)).toBe(2);
    expect(prefixBefore([15, 16], 13)).toBe(0);
    expect(prefixBefore([11, 12], 13)).toBe(2);
  });
});

import { GrowingMap } from './growing-map';

describe('GrowingMap', () => {
  it('reads like a Map: the last write of a key, keys in first-insertion order, the size of distinct keys', () => {
    const map = GrowingMap.empty<string, number>().set('a', 1).set('b', 2).set('a', 3);
    expect([...map]).toEqual([...new Map([['a', 1], ['b', 2]]).set('a', 3)]);
    expect(map.get('a')).toBe(3);
    expect(map.has('c')).toBe(false);
    expect(map.size).toBe(2);
    expect([...map.keys()]).toEqual(['a', 'b']);
    expect([...map.values()]).toEqual([3, 2]);
  });

  it('leaves every older version as it was, also when an older version is written again (a branch)', () => {
    const v1 = GrowingMap.of([['a', 1]]);
    const v2 = v1.set('b', 2);
    const branch = v1.set('b', 20).set('a', 10);
    const v3 = v2.set('a', 30);
    expect([...v1]).toEqual([['a', 1]]);
    expect([...v2]).toEqual([['a', 1], ['b', 2]]);
    expect([...v3]).toEqual([['a', 30], ['b', 2]]);
    expect([...branch]).toEqual([['a', 10], ['b', 20]]);
    expect(v1.get('b')).toBeUndefined();
    expect([v1.size, v2.size, v3.size, branch.size]).toEqual([1, 2, 2, 2]);
  });
});

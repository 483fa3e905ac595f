import { Remembered } from './remembered';

describe('Remembered', () => {
  it('hands a value back once, and forgets it', () => {
    const r = new Remembered<number>(10);
    r.set('a', 1);
    expect(r.take('a')).toBe(1);
    expect(r.take('a')).toBeUndefined();
    expect(r.take('never')).toBeUndefined();
  });

  it('stays within its limit by forgetting the oldest first, a batch at a time', () => {
    const r = new Remembered<number>(100);
    for (let i = 0; i < 100; i++) r.set(`k${i}`, i);
    expect(r.size).toBe(100);
    r.set('k100', 100);
    // A twentieth of the limit (5) forgotten together with the one over it.
    expect(r.size).toBe(95);
    for (let i = 0; i < 6; i++) expect(r.take(`k${i}`)).toBeUndefined();
    expect(r.take('k6')).toBe(6);
    expect(r.take('k100')).toBe(100);
    for (let i = 101; i < 1_000; i++) r.set(`k${i}`, i);
    expect(r.size).toBeLessThanOrEqual(100);
    expect(r.take('k999')).toBe(999);
    expect(r.take('k101')).toBeUndefined();
  });

  it('counts a key set again as new: it is forgotten after the ones set before it', () => {
    const r = new Remembered<number>(20);
    for (let i = 0; i < 20; i++) r.set(`k${i}`, i);
    r.set('k0', 0);
    r.set('k20', 20);
    expect(r.take('k0')).toBe(0);
    expect(r.take('k1')).toBeUndefined();
  });
});

import { parseTarget, ratioIs, renderReport, verdict, type Row } from './report';

const row = (value: number, target: Row['target'], floor?: number): Row => ({ group: 'steerline', name: 'x', value, unit: 'ms', floor, floorName: 'f', target });

describe('bench report targets', () => {
  it('reads a ratio target against the row’s floor', () => {
    expect(verdict(row(3.9, '≤ 2×', 2))).toBe('PASS');
    expect(verdict(row(4.1, '≤ 2×', 2))).toBe('FAIL');
    expect(verdict(row(600, '≥ 0.5×', 1000))).toBe('PASS');
    expect(verdict(row(400, '≥ 0.5×', 1000))).toBe('FAIL');
  });

  it('fails a ratio target whose row has no floor', () => {
    expect(verdict(row(1, '≤ 2×'))).toBe('FAIL');
  });

  it('reads a value target with its unit and a thousands space', () => {
    expect(verdict(row(1900, '< 2048 MiB'))).toBe('PASS');
    expect(verdict(row(2048, '< 2048 MiB'))).toBe('FAIL');
    expect(verdict(row(17_000, '≥ 16 700 events/s'))).toBe('PASS');
    expect(verdict(row(0, '0'))).toBe('PASS');
    expect(verdict(row(1, '0'))).toBe('FAIL');
  });

  it('gives no verdict for a row without a target or with words only', () => {
    expect(verdict(row(1, undefined))).toBe('');
    expect(verdict(row(1, 'as low as it goes'))).toBe('');
    expect(parseTarget('as low as it goes')).toBeUndefined();
  });

  it('takes a target object with its own text', () => {
    const r = row(0.15, ratioIs('≤', 1, '≤ 1 ack per batch'), 0.16);
    expect(verdict(r)).toBe('PASS');
    expect(renderReport([r], 'm').table).toContain('| ≤ 1 ack per batch | PASS |');
  });

  it('fails a target whose figure could not be measured', () => {
    expect(verdict(row(NaN, '≤ 2×', 1))).toBe('FAIL');
  });
});

import { Progress, formatLeft } from './progress';

/** A stream that records what was written, a terminal or not. */
function sink(isTTY: boolean) {
  const writes: string[] = [];
  return { writes, stream: { isTTY, write: (s: string) => writes.push(s) } as unknown as NodeJS.WriteStream };
}

describe('progress of an operator tool', () => {
  it('in a terminal: one line redrawn in place with done/total, rate and time left, cleared at the end', () => {
    let now = 0;
    const out = sink(true);
    const progress = new Progress({ label: 'rebuild', stream: out.stream, env: {}, now: () => now });
    expect(progress.interactive).toBe(true);
    now = 50;
    progress.update(100, 1000); // too soon after the last draw
    expect(out.writes).toEqual([]);
    now = 1000;
    progress.update(250, 1000);
    now = 2000;
    progress.update(500, 1000);
    expect(out.writes).toHaveLength(2);
    for (const line of out.writes) expect(line.startsWith('\r\x1b[2K')).toBe(true);
    expect(out.writes[1]).toMatch(/rebuild [█░]{30}  50%  500\/1000 events  250\/s  2s left$/);
    progress.stop();
    expect(out.writes.at(-1)).toBe('\r\x1b[2K');
  });

  it('not a terminal, or CI=true: a plain line every few seconds, JSON when asked', () => {
    let now = 0;
    const plain = sink(false);
    const progress = new Progress({ label: 'audit', stream: plain.stream, env: {}, now: () => now });
    for (now = 500; now <= 7000; now += 500) progress.update(now * 10, 100_000);
    expect(plain.writes).toEqual(['audit: 30000/100000 events (30.0%), 10000/s, 7s left\n', 'audit: 60000/100000 events (60.0%), 10000/s, 4s left\n']);

    const ci = sink(true);
    const json = new Progress({ label: 'rebuild', stream: ci.stream, env: { CI: 'true' }, json: true, now: () => now });
    expect(json.interactive).toBe(false);
    now += 3000;
    json.update(10, 20);
    expect(JSON.parse(ci.writes[0])).toEqual({ msg: 'rebuild progress', done: 10, total: 20, perSecond: 3, secondsLeft: 3 });
    json.stop();
    expect(ci.writes).toHaveLength(1);
  });

  it('says the time left in minutes and seconds, or ? before there is a rate', () => {
    expect(formatLeft(undefined)).toBe('?');
    expect(formatLeft(59.4)).toBe('59s');
    expect(formatLeft(61)).toBe('1m01s');
  });
});

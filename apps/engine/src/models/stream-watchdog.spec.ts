import { setTimeout as sleep } from 'node:timers/promises';
import { StreamStalledError, touching, watchedAttempt } from './stream-watchdog';

/** A stream as the SDKs give it: items with a pause before each, ending quietly (not throwing) when its request is aborted. */
async function* sdkStream(signal: AbortSignal, pausesMs: number[]): AsyncGenerator<number> {
  for (const [i, ms] of pausesMs.entries()) {
    await sleep(ms, undefined, { signal }).catch(() => undefined);
    if (signal.aborted) return;
    yield i;
  }
}

async function readAll(signal: AbortSignal, touch: () => void, pausesMs: number[]): Promise<number[]> {
  const out: number[] = [];
  for await (const n of touching(sdkStream(signal, pausesMs), touch)) out.push(n);
  return out;
}

describe('a streamed model answer under the watchdog', () => {
  it('a stream whose chunks keep coming, however long in total, is read whole', async () => {
    const turn = new AbortController();
    const got = await watchedAttempt(turn.signal, 100, (a) => (a.touch(), readAll(a.signal, a.touch, [40, 40, 40, 40, 40])));
    expect(got).toEqual([0, 1, 2, 3, 4]);
  });

  it('a stream that goes silent longer than the limit fails with StreamStalledError, not with the partial answer its SDK ends with', async () => {
    const turn = new AbortController();
    const attempt = watchedAttempt(turn.signal, 100, (a) => (a.touch(), readAll(a.signal, a.touch, [10, 10, 1_000, 10])));
    await expect(attempt).rejects.toBeInstanceOf(StreamStalledError);
    expect(turn.signal.aborted).toBe(false);
  });

  it('a cancel of the turn aborts the request and surfaces as the turn’s reason, never as an answer', async () => {
    const turn = new AbortController();
    const attempt = watchedAttempt(turn.signal, 10_000, (a) => (a.touch(), readAll(a.signal, a.touch, [10, 500, 10])));
    setTimeout(() => turn.abort(new Error('cancelled by the user')), 50);
    await expect(attempt).rejects.toThrow('cancelled by the user');
  });
});

import { EventEmitter } from 'node:events';
import type { HttpResponse } from '../http/http.types';
import type { LoggedFrame } from './conversation-tails';
import { EventWatcher } from './event-watcher';

/** A response whose unsent bytes the test sets, recording what was written. */
class FakeResponse extends EventEmitter {
  written: string[] = [];
  writableLength = 0;
  writableEnded = false;
  destroyed = false;
  write(chunk: string): boolean {
    this.written.push(chunk);
    return true;
  }
  end(): void {
    this.writableEnded = true;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

const frame = (seq: number) => `id: ${seq}\n\n`;
const stored = (seq: number, last: number) => ({ seq, last, frame: frame(seq) });

function setup(log: number[], opts: { after?: number; bufferBytes?: number; latest?: () => number } = {}) {
  const res = new FakeResponse();
  const reads: number[] = [];
  let ended = 0;
  const watcher = new EventWatcher(res as unknown as HttpResponse, {
    after: opts.after ?? 0,
    live: true,
    bufferBytes: opts.bufferBytes ?? 1_000,
    next: async (fromSeq): Promise<LoggedFrame | null> => {
      reads.push(fromSeq);
      const seq = log.find((s) => s >= fromSeq);
      return seq === undefined ? null : { seq, frame: frame(seq) };
    },
    latest: opts.latest ?? (() => 0),
    onEnd: () => ended++,
  });
  const ids = () => res.written.filter((w) => w.startsWith('id: ')).map((w) => Number(w.slice(4)));
  return { res, watcher, reads, ids, ended: () => ended };
}

const settle = () => new Promise((r) => setImmediate(r));
const until = async (ok: () => boolean) => {
  for (let i = 0; i < 100 && !ok(); i++) await settle();
};

describe('one event stream: replay from the log, then follow by the stream sequence chain', () => {
  it('replays from its position, then takes announced events whose predecessor it has sent, skipping duplicates', async () => {
    const log = [3, 5, 9];
    const { watcher, ids, reads } = setup(log, { after: 3 });
    watcher.start();
    await until(() => watcher.isLive);
    expect(ids()).toEqual([5, 9]);
    expect(reads).toEqual([4, 6, 10]);
    watcher.onStored(stored(9, 5)); // already sent
    watcher.onStored(stored(12, 9));
    expect(ids()).toEqual([5, 9, 12]);
  });

  it('an announced event whose predecessor it has not sent means a gap: it reads the log from its position instead', async () => {
    const log = [1, 2];
    const { watcher, ids } = setup(log);
    watcher.start();
    await until(() => watcher.isLive);
    log.push(4, 7);
    watcher.onStored(stored(7, 4)); // 4 was missed (say, while NATS was away)
    await until(() => ids().length === 4);
    expect(ids()).toEqual([1, 2, 4, 7]);
    expect(watcher.isLive).toBe(true);
  });

  it('an event announced during the replay that the replay did not cover is read before it goes live', async () => {
    const log = [1];
    const { watcher, ids } = setup(log);
    watcher.start();
    // Stored after the replay's read of "next after 1", announced before the replay ended.
    log.push(2);
    watcher.onStored(stored(2, 1));
    await until(() => watcher.isLive);
    expect(ids()).toEqual([1, 2]);
  });

  it('a live stream behind what its conversation’s subscription handed out reads the log at the next heartbeat', async () => {
    const log = [1];
    let latest = 1;
    const { watcher, ids, res } = setup(log, { latest: () => latest });
    watcher.start();
    await until(() => watcher.isLive);
    watcher.heartbeat();
    expect(ids()).toEqual([1]);
    // Event 2 was handed to the conversation's subscribers, but this stream never sent it.
    log.push(2);
    latest = 2;
    watcher.heartbeat();
    await until(() => ids().length === 2);
    expect(ids()).toEqual([1, 2]);
    expect(res.written.filter((w) => w === ': heartbeat\n\n')).toHaveLength(2);
    expect(watcher.isLive).toBe(true);
  });

  it('drops live messages for a lagging reader, says how many when it caught up, and ends a reader twice the buffer behind', async () => {
    const { res, watcher, ended } = setup([1], { bufferBytes: 100 });
    watcher.start();
    await until(() => watcher.isLive);
    res.writableLength = 150;
    watcher.onLive('event: ModelDelta\ndata: {}\n\n');
    watcher.onLive('event: ModelDelta\ndata: {}\n\n');
    res.writableLength = 0;
    watcher.onLive('event: ToolProgress\ndata: {}\n\n');
    expect(res.written.slice(-2)).toEqual([': 2 live messages dropped: the reader lagged\n\n', 'event: ToolProgress\ndata: {}\n\n']);

    res.writableLength = 250;
    watcher.onStored(stored(2, 1));
    expect(res.written.at(-1)).toBe(': reader too slow: reconnect with Last-Event-ID: 2\n\n');
    expect(res.writableEnded).toBe(true);
    expect(ended()).toBe(1);
  });
});

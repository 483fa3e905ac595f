import type { HttpResponse } from '../http/http.types';
import type { LoggedFrame, StoredFrame, TailMember } from './conversation-tails';
import { sseComment } from './sse';
import { drained } from '../http/drained';

/** How long a stream ended for a slow reader may take to flush its last bytes before its socket is closed. */
const FLUSH_GRACE_MS = 5_000;

export interface WatcherOptions {
  /** The last stream sequence the client has; events after it are sent. */
  after: number;
  /** Interleave live messages (ModelDelta, ToolProgress). */
  live: boolean;
  /** Unsent output allowed per stream: past it, live messages are dropped; past twice it, the stream ends. */
  bufferBytes: number;
  /** The conversation's first stored event at or after a sequence (a direct get on the log). */
  next(fromSeq: number): Promise<LoggedFrame | null>;
  /** The highest stream sequence the conversation's subscription has handed out here (0: none yet). */
  latest(): number;
  /** Called once, when the stream has ended for any reason. */
  onEnd(): void;
}

/**
 * One client's event stream. It has sent every event of the conversation up
 * to `covered` (or the client had them). Behind, it replays from the log one
 * direct get at a time; caught up, it takes the stored events its
 * conversation's shared subscription hands it. Each of those names its
 * predecessor on the conversation subject, so the switch-over is exact: an
 * event at or below `covered` is a duplicate and skipped; one whose
 * predecessor is above `covered` means something was missed (it arrived
 * before the replay finished, or while NATS was away) and the replay resumes
 * from the log. Nothing is ever sent twice or skipped, by stream sequence.
 */
export class EventWatcher implements TailMember {
  private covered: number;
  private phase: 'replaying' | 'live' | 'ended' = 'replaying';
  /**
   * The highest sequence announced during the replay (Infinity: anything may
   * have been missed). Above `covered` when the replay ends, the log is read
   * once more before going live.
   */
  private announced = 0;
  private droppedLive = 0;

  constructor(
    private readonly res: HttpResponse,
    private readonly opts: WatcherOptions,
  ) {
    this.covered = opts.after;
  }

  get ended(): boolean {
    return this.phase === 'ended';
  }

  get isLive(): boolean {
    return this.phase === 'live';
  }

  /** The last stream sequence sent (what the client would resume after). */
  get position(): number {
    return this.covered;
  }

  /** Starts the replay; the conversation's subscription must already be live. */
  start(): void {
    void this.replay();
  }

  onStored(stored: StoredFrame): void {
    if (this.phase === 'replaying') this.announced = Math.max(this.announced, stored.seq);
    if (this.phase !== 'live' || stored.seq <= this.covered) return;
    if (stored.last > this.covered) return void this.replay();
    this.covered = stored.seq;
    this.write(stored.frame);
    // A reader this far behind will not catch up; the log keeps what it missed.
    if (this.res.writableLength > 2 * this.opts.bufferBytes) this.endSlow();
  }

  onLive(frame: string): void {
    if (this.phase !== 'live' || !this.opts.live) return;
    // A lagging reader loses live messages, never stored events.
    if (this.res.writableLength > this.opts.bufferBytes) {
      this.droppedLive++;
      return;
    }
    if (this.droppedLive > 0) {
      this.write(sseComment(`${this.droppedLive} live messages dropped: the reader lagged`));
      this.droppedLive = 0;
    }
    this.write(frame);
  }

  resync(): void {
    if (this.phase === 'live') void this.replay();
    else this.announced = Infinity;
  }

  /**
   * Also a check that costs nothing: a live stream behind what its
   * conversation's subscription has handed out here has missed an event (it
   * should never happen; if it does, the client must not wait forever for it),
   * so it reads the log from its position.
   */
  heartbeat(): void {
    if (this.phase === 'ended') return;
    if (this.res.writableLength > 2 * this.opts.bufferBytes) return this.endSlow();
    this.write(sseComment('heartbeat'));
    if (this.phase === 'live' && this.opts.latest() > this.covered) void this.replay();
  }

  /** Ends the stream (shutdown, client gone, error); the client resumes with its Last-Event-ID. */
  end(comment?: string): void {
    if (this.phase === 'ended') return;
    this.phase = 'ended';
    if (!this.res.writableEnded) {
      if (comment) this.res.write(sseComment(comment));
      this.res.end();
    }
    this.opts.onEnd();
  }

  private endSlow(): void {
    this.end(`reader too slow: reconnect with Last-Event-ID: ${this.covered}`);
    // A reader that never reads would hold the socket and its buffer forever.
    setTimeout(() => this.res.destroy(), FLUSH_GRACE_MS).unref();
  }

  private async replay(): Promise<void> {
    if (this.ended) return;
    this.phase = 'replaying';
    try {
      do {
        this.announced = 0;
        for (let m = await this.opts.next(this.covered + 1); m; m = await this.opts.next(this.covered + 1)) {
          if (this.ended) return;
          this.covered = m.seq;
          // The replay waits for a slow reader instead of buffering the log in memory.
          if (!this.write(m.frame)) await drained(this.res);
          if (this.ended) return;
        }
      } while (this.announced > this.covered && !this.ended);
      if (!this.ended) this.phase = 'live';
    } catch {
      this.end(`the event log does not answer: reconnect with Last-Event-ID: ${this.covered}`);
    }
  }

  private write(chunk: string): boolean {
    return this.res.writableEnded ? false : this.res.write(chunk);
  }
}

/** The client's timers: a stream's idle watchdog and a pause that an abort ends early. */

export interface IdleTimer {
  /** Bytes arrived: start the wait over. */
  touch(): void;
  stop(): void;
}

/** Calls `onIdle` once `ms` pass without a touch (0: never). Unref'd: it never keeps a process alive. */
export function idleTimer(ms: number, onIdle: () => void): IdleTimer {
  if (!(ms > 0)) return { touch: () => undefined, stop: () => undefined };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const touch = () => {
    clearTimeout(timer);
    timer = setTimeout(onIdle, ms);
    timer.unref?.();
  };
  touch();
  return { touch, stop: () => clearTimeout(timer) };
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

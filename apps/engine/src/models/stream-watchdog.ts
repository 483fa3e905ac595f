/** A streamed answer that sent nothing for the attempt's timeout: transient, tried again as a whole answer. */
export class StreamStalledError extends Error {
  constructor(readonly idleMs: number) {
    super(`the answer stream sent nothing for ${idleMs} ms`);
    this.name = 'StreamStalledError';
  }
}

/** What one streamed attempt gets: the signal to give its request, and `touch` to call for every chunk. */
export interface WatchedAttempt {
  signal: AbortSignal;
  /** A chunk arrived: the silence starts over. The watch begins at the first touch (the response's headers). */
  touch(): void;
}

/**
 * One streamed attempt under a watchdog. The SDKs' own timeout ends when the
 * response's headers arrive; an endpoint that then stops sending mid-answer
 * would hold the turn forever. Here a silence of `idleMs` between chunks
 * aborts the attempt's request (never the turn) and the attempt fails with
 * StreamStalledError, which the retry rules treat as transient. A cancel of
 * the turn still aborts the request and surfaces as the caller's abort.
 */
export async function watchedAttempt<T>(turn: AbortSignal, idleMs: number, run: (attempt: WatchedAttempt) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onTurnAbort = () => controller.abort(turn.reason);
  if (turn.aborted) onTurnAbort();
  else turn.addEventListener('abort', onTurnAbort, { once: true });
  let stalled = false;
  let timer: NodeJS.Timeout | undefined;
  const touch = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = true;
      controller.abort(new StreamStalledError(idleMs));
    }, idleMs);
  };
  try {
    const answer = await run({ signal: controller.signal, touch });
    // The SDKs end a stream whose request was aborted as if it were complete: what it
    // returned then is a partial answer, never one to record.
    if (stalled && !turn.aborted) throw new StreamStalledError(idleMs);
    if (turn.aborted) throw turn.reason ?? new Error('aborted');
    return answer;
  } catch (err) {
    if (stalled && !turn.aborted) throw new StreamStalledError(idleMs);
    throw err;
  } finally {
    clearTimeout(timer);
    turn.removeEventListener('abort', onTurnAbort);
  }
}

/** `stream`, touching the watchdog for every item. */
export async function* touching<T>(stream: AsyncIterable<T>, touch: () => void): AsyncGenerator<T> {
  for await (const item of stream) {
    touch();
    yield item;
  }
}

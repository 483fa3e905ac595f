import type { HttpResponse } from './http.types';

/**
 * Waits for room in the socket's buffer, or for the client to leave. Both
 * listeners are removed either way: `events.once` would leave the losing one
 * behind on every wait, and a long stream waits many times.
 */
export function drained(res: HttpResponse): Promise<void> {
  if (res.writableEnded || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

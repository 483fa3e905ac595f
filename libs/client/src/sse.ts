/** One dispatched Server-Sent Event. `id` is the last id seen, as the spec keeps it across events. */
export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
  /** Whether the event had an `id:` line of its own (a live message has none). */
  hasId?: boolean;
}

/**
 * Parses a Server-Sent Events byte stream (WHATWG HTML §9.2.6): lines end in
 * CRLF, LF or CR; `data` lines are joined with "\n"; comments and unknown
 * fields are ignored; an event without data is not dispatched. No dependency:
 * it works on any `ReadableStream<Uint8Array>` (a fetch body). `onBytes` is
 * called for every chunk read, comments included (a liveness signal).
 */
export async function* readSse(body: ReadableStream<Uint8Array>, onBytes?: () => void): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  let lastId: string | undefined;
  let event = '';
  let data: string[] = [];
  let hasId = false;
  // A CR at the end of a chunk may be half of a CRLF: hold it until the next chunk.
  let pendingCr = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onBytes?.();
      let chunk = decoder.decode(value, { stream: true });
      if (pendingCr && chunk.startsWith('\n')) chunk = chunk.slice(1);
      buffer += chunk;
      pendingCr = buffer.endsWith('\r');
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line === '') {
          if (data.length > 0) yield { id: lastId, event: event || 'message', data: data.join('\n'), hasId };
          event = '';
          data = [];
          hasId = false;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) {
          lastId = value;
          hasId = true;
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

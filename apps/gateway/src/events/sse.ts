import { SteerlineError } from '@steerline/contracts';

/**
 * One Server-Sent Event (WHATWG HTML §9.2). `data` is split on line breaks
 * into several `data:` lines, which a client joins back with "\n", so any
 * payload survives the framing.
 */
export function sseEvent(id: number, type: string, data: string): string {
  return `id: ${id}\n${sseLive(type, data)}`;
}

/**
 * A live message (docs/design.md §11): an event WITHOUT an `id:` line, so a
 * client's Last-Event-ID stays the stream sequence of the last stored event.
 */
export function sseLive(type: string, data: string): string {
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}\n`);
  return `event: ${sseToken(type)}\n${lines.join('')}\n`;
}

/** A comment line: ignored by clients, keeps proxies from closing an idle stream. */
export function sseComment(text: string): string {
  return `: ${sseToken(text)}\n\n`;
}

/** How long a client should wait before reconnecting, in ms. */
export function sseRetry(ms: number): string {
  return `retry: ${Math.round(ms)}\n\n`;
}

// A field value must not contain a line break, or it would start a new field.
function sseToken(value: string): string {
  return value.replace(/[\r\n]+/g, ' ');
}

const SEQUENCE = /^\d{1,15}$/;

/**
 * The stream sequence a (re)connecting client has already seen: its
 * `Last-Event-ID` (what a browser's EventSource sends on reconnect) or else
 * `?after=`. `Last-Event-ID` wins because a reconnecting browser resends the
 * original URL, whose `after` is older. 0: from the beginning.
 */
export function resumeAfter(lastEventId: string | string[] | undefined, after: unknown): number {
  if (Array.isArray(lastEventId)) throw new SteerlineError('invalid_request', 'Last-Event-ID must be given once');
  if (lastEventId !== undefined && lastEventId.trim() !== '') return sequence(lastEventId.trim(), 'Last-Event-ID');
  if (after === undefined) return 0;
  if (typeof after !== 'string') throw new SteerlineError('invalid_request', 'after must be given once');
  return sequence(after.trim(), 'after');
}

function sequence(value: string, name: string): number {
  if (!SEQUENCE.test(value)) throw new SteerlineError('invalid_request', `${name} must be a stream sequence (a non-negative integer)`);
  return Number(value);
}

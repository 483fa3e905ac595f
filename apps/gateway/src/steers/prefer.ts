import { WAIT_MAX_SECONDS } from '@steerline/contracts';

/**
 * The `wait` preference of RFC 7240 `Prefer` headers, in seconds: 0 when
 * absent or unreadable (a server ignores preferences it cannot honour, §2),
 * capped at WAIT_MAX_SECONDS. Only the first `wait` counts (§2: a repeated
 * preference is ignored). Values are delta-seconds; quoted and BWS-padded
 * forms (`wait = "5"`) are accepted as the grammar allows.
 */
export function parsePreferWait(header: string | string[] | undefined): number {
  // The header as clients send it, one `wait=<n>`, read without the general parse (issue 34).
  const plain = typeof header === 'string' ? PLAIN_WAIT.exec(header) : null;
  if (plain) return Math.min(Number(plain[1]), WAIT_MAX_SECONDS);
  const values = header === undefined ? [] : Array.isArray(header) ? header : [header];
  for (const preference of values.flatMap((v) => splitOutsideQuotes(v, ','))) {
    const [head] = splitOutsideQuotes(preference, ';');
    const eq = head.indexOf('=');
    const name = (eq < 0 ? head : head.slice(0, eq)).trim().toLowerCase();
    if (name !== 'wait') continue;
    const value = eq < 0 ? '' : unquote(head.slice(eq + 1).trim());
    // An unreadable first `wait` is ignored as a whole; a later one does not replace it.
    if (!/^\d+$/.test(value)) return 0;
    return Math.min(Number(value), WAIT_MAX_SECONDS);
  }
  return 0;
}

const PLAIN_WAIT = /^wait=(\d+)$/;

/** The `Preference-Applied` value for an honoured wait. */
export function preferenceApplied(waitSeconds: number): string {
  return `wait=${waitSeconds}`;
}

function unquote(value: string): string {
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) return value.slice(1, -1).replace(/\\(.)/g, '$1');
  return value;
}

function splitOutsideQuotes(value: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (c === separator && !quoted) {
      parts.push(value.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(value.slice(start));
  return parts;
}

/**
 * Bounds a tool's output or a model's answer (docs/design.md §14): text over the
 * bound is cut at a UTF-8 character boundary and ends with a marker the model
 * and every reader can see, e.g. `… [truncated: 5 242 880 bytes, limit 262 144]`.
 * The result, marker included, is never longer than the limit in UTF-8 bytes.
 */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Groups digits by three with spaces, as in the marker. */
const grouped = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');

export function truncationMarker(originalBytes: number, limitBytes: number): string {
  return `… [truncated: ${grouped(originalBytes)} bytes, limit ${grouped(limitBytes)}]`;
}

/** `text` when it fits in `limitBytes`; otherwise its head plus the marker, within `limitBytes`. */
export function truncateText(text: string, limitBytes: number): string {
  // Cheap exit: a string of n UTF-16 units is at most 3n UTF-8 bytes.
  if (text.length * 3 <= limitBytes) return text;
  const bytes = encoder.encode(text);
  if (bytes.length <= limitBytes) return text;
  return cutBytes(bytes, limitBytes, bytes.length);
}

/**
 * A tool's output within `limitBytes`: a string is cut as text; any other
 * JSON value that is too large becomes a string, its JSON text cut.
 */
export function boundOutput(output: unknown, limitBytes: number): unknown {
  if (typeof output === 'string') return truncateText(output, limitBytes);
  if (output === null || output === undefined || typeof output !== 'object') return output;
  const json = JSON.stringify(output);
  return json === undefined ? output : json.length * 3 <= limitBytes ? output : truncatedJson(output, json, limitBytes);
}

function truncatedJson(output: unknown, json: string, limitBytes: number): unknown {
  const bytes = encoder.encode(json);
  return bytes.length <= limitBytes ? output : cutBytes(bytes, limitBytes, bytes.length);
}

function cutBytes(bytes: Uint8Array, limitBytes: number, originalBytes: number): string {
  const marker = truncationMarker(originalBytes, limitBytes);
  let end = Math.max(0, limitBytes - encoder.encode(marker).length);
  // Back up over continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end)) + marker;
}

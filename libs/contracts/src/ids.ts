import { randomUUID } from 'node:crypto';

/**
 * RFC 9562 UUIDv7: time-ordered, so ids sort by creation and index well. The
 * random bits come from `randomUUID` (v4), which draws from a cached entropy
 * pool: one id costs no system call, where `randomBytes(16)` costs one.
 */
export function uuidv7(now: number = Date.now()): string {
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V already the RFC variant
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15, 18)}-${random.slice(19)}`;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}

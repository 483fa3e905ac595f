import { EVENT_TYPES, EventSchemas, type EventType } from './events';

/**
 * Upcasting: a reader turns an event written at an older schema version into
 * the current one before validating it, so every consumer handles one shape
 * per type while the log keeps every version it ever held (events are never
 * rewritten).
 *
 * Adding a version of an event type:
 *   1. change its schema in events.ts and its envelope's `version` literal;
 *   2. register an upcaster from the previous version here, in `upcasters`;
 *   3. keep the previous version's golden fixture (`fixtures/<Type>.v<n>.json`)
 *      and committed JSON Schema (`libs/contracts/schemas/<Type>.v<n>.json`):
 *      they are the history the contract gate checks still decodes;
 *   4. run `npm run contracts:generate` for the new version's schema.
 */

/** An event as it sits in the log: JSON, not yet validated. */
export type RawEvent = { type: string; version: number; [field: string]: unknown };

/** Turns an event of version n into the same fact at version n + 1. */
export type Upcaster = (event: RawEvent) => RawEvent;

export type UpcastResult = { ok: true; event: RawEvent; from: number } | { ok: false; reason: 'unknown_version' | 'upcast_failed'; message: string };

/** The version every event type is written at today, read from its envelope schema. */
export function currentVersion(type: EventType): number {
  return EventSchemas[type].shape.version.value as number;
}

export const CURRENT_VERSIONS: Readonly<Record<EventType, number>> = Object.fromEntries(EVENT_TYPES.map((t) => [t, currentVersion(t)])) as Record<EventType, number>;

/** Upcasters keyed by event type and the version they read. */
export class UpcasterRegistry {
  private readonly steps = new Map<string, Upcaster>();

  /** Registers the step from `fromVersion` to `fromVersion + 1`; a second one for the same step is a bug. */
  register(type: string, fromVersion: number, upcast: Upcaster): this {
    const key = stepKey(type, fromVersion);
    if (this.steps.has(key)) throw new Error(`an upcaster from ${type} v${fromVersion} is already registered`);
    this.steps.set(key, upcast);
    return this;
  }

  has(type: string, fromVersion: number): boolean {
    return this.steps.has(stepKey(type, fromVersion));
  }

  /** Every step registered, for the contract gate. */
  list(): { type: string; fromVersion: number }[] {
    return [...this.steps.keys()].map((key) => {
      const [type, version] = key.split('@');
      return { type, fromVersion: Number(version) };
    });
  }

  /**
   * Raises an event to `target`, one registered step at a time. The registry
   * stamps each step's version, so an upcaster cannot forget to. Never throws.
   */
  upcast(event: RawEvent, target: number): UpcastResult {
    const from = event.version;
    let current = event;
    while (current.version < target) {
      const step = this.steps.get(stepKey(current.type, current.version));
      if (!step) {
        return { ok: false, reason: 'unknown_version', message: `${current.type} v${from} is not readable: no upcaster from v${current.version}` };
      }
      try {
        current = { ...step(structuredClone(current)), type: current.type, version: current.version + 1 };
      } catch (err) {
        return { ok: false, reason: 'upcast_failed', message: `upcasting ${current.type} from v${current.version} failed: ${(err as Error)?.message ?? err}` };
      }
    }
    return { ok: true, event: current, from };
  }
}

function stepKey(type: string, fromVersion: number): string {
  return `${type}@${fromVersion}`;
}

/**
 * Every upcaster of the contract. `upcasters.spec.ts` shows the mechanism on a
 * synthetic v0.
 */
export const upcasters = new UpcasterRegistry()
  // v2 only added a model provider (`anthropic`): every v1 event is a valid v2 one.
  .register('TurnStarted', 1, (event) => event)
  // v3 (TurnQueued v2) added the turn's agent fields and a model's endpoint, all optional, each absent
  // meaning what an older turn had: no instructions, the provider's defaults, every tool, the default
  // endpoint. So every older event is a valid newer one.
  .register('TurnStarted', 2, (event) => event)
  .register('TurnQueued', 1, (event) => event)
  // v2 only added the boundary `interrupt`: every v1 event is a valid v2 one.
  .register('SteeringDelivered', 1, (event) => event)
  // v2 only added drop reasons and an optional `nextTurnId`: every v1 event is a valid v2 one.
  .register('SteerDropped', 1, (event) => event);

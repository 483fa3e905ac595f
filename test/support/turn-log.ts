import { SteerlineEventSchema, eventVersion, uuidv7, type EventData, type EventType, type SteerlineEvent } from '@steerline/contracts';

/** Hand-built events, as an engine would append them, for tests that feed the log directly. */
export const TENANT = 'default';
let clock = Date.parse('2031-01-01T00:00:00.000Z');
const now = () => new Date((clock += 1000)).toISOString();

/** One turn's events with gapless seqs and increasing timestamps. */
export class TurnLog {
  readonly turnId = uuidv7();
  seq = 0;
  constructor(readonly conversationId: string) {}

  event<T extends Exclude<EventType, 'ConversationCreated'>>(type: T, data: EventData<T>): SteerlineEvent {
    const e = { id: uuidv7(), type, version: eventVersion(type), tenantId: TENANT, conversationId: this.conversationId, turnId: this.turnId, seq: ++this.seq, at: now(), data };
    // Parsing proves each hand-built event is valid, not just well typed.
    return SteerlineEventSchema.parse(e) as SteerlineEvent;
  }
}

export function conversationCreated(conversationId: string): SteerlineEvent {
  return SteerlineEventSchema.parse({ id: uuidv7(), type: 'ConversationCreated', version: 1, tenantId: TENANT, conversationId, turnId: null, seq: 0, at: now(), data: {} }) as SteerlineEvent;
}

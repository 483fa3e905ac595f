import { resolve } from 'node:path';
import { PubHeaders } from '@nats-io/jetstream';
import {
  EVENT_TYPE_HEADER,
  EVENT_TYPES,
  EventSchemas,
  STEER_ID_HEADER,
  decodeEvent,
  parseEventSubject,
  schemaFileName,
  type EventType,
} from '@steerline/contracts';
import { readCommittedSchemas } from '@steerline/runtime';
import { startStack, type Stack } from '../support/stack';
import { runSteeringScenario } from './scenario';
import { schemaValidator } from './validator';

const committed = readCommittedSchemas(resolve(__dirname, '../..'));

interface RawMessage {
  seq: number;
  subject: string;
  headers: Record<string, string | undefined>;
  body: { type: EventType; version: number; id: string; tenantId: string; conversationId: string; data: Record<string, unknown> };
}

describe('contract gate: the events of an end-to-end run match the published contract', () => {
  let stack: Stack;
  let log: RawMessage[];

  beforeAll(async () => {
    stack = await startStack();
    await runSteeringScenario(stack);
    // Read every message as stored, bytes and headers, not through the decoder under test.
    const { state } = await stack.nats.jsm.streams.info(stack.nats.s.stream);
    log = [];
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const m = await stack.nats.jsm.streams.getMessage(stack.nats.s.stream, { seq });
      if (!m) continue;
      log.push({
        seq,
        subject: m.subject,
        // A missing header reads as '': undefined keeps "absent" distinct.
        headers: { type: m.header.get(EVENT_TYPE_HEADER) || undefined, msgId: m.header.get(PubHeaders.MsgIdHdr) || undefined, steerId: m.header.get(STEER_ID_HEADER) || undefined },
        body: m.json(),
      });
    }
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('the run wrote every event type of the contract', () => {
    expect(new Set(log.map((m) => m.body.type))).toEqual(new Set(EVENT_TYPES));
  });

  it('every event validates against the committed JSON Schema of its type and version', () => {
    const failures = log.flatMap((m) => {
      const schema = committed.get(schemaFileName(m.body.type, m.body.version));
      if (!schema) return [`#${m.seq} ${m.body.type} v${m.body.version}: no committed schema`];
      return schemaValidator(schema)(m.body).map((problem) => `#${m.seq} ${m.body.type}: ${problem}`);
    });
    expect(failures).toEqual([]);
  });

  it('every event matches the writer’s strict schema exactly: no field the contract does not declare', () => {
    const failures = log.filter((m) => !EventSchemas[m.body.type].safeParse(m.body).success).map((m) => `#${m.seq} ${m.body.type}`);
    expect(failures).toEqual([]);
    expect(log.filter((m) => decodeEvent(JSON.stringify(m.body)).ok !== true)).toEqual([]);
  });

  it('every message carries its type, its id for deduplication and, for steer events, the steer id as headers, on its conversation’s subject', () => {
    for (const m of log) {
      expect(m.headers.type).toBe(m.body.type);
      expect(m.headers.msgId).toBe(m.body.id);
      expect(m.headers.steerId).toBe(m.body.data.steerId as string | undefined);
      expect(parseEventSubject(m.subject)).toEqual({ prefix: stack.prefix, tenantId: m.body.tenantId, conversationId: m.body.conversationId });
    }
  });
});

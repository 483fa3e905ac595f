import type { NatsConnection } from '@nats-io/transport-node';
import { NATS_URL, uniquePrefix } from '../../../test/support/env';
import { connectNats, encodeJson, serve } from './nats';
import { maxPayload } from './safe-send';
import { nestReply, nestRequest } from './nest-envelope';

describe("Nest's NATS envelope", () => {
  const subject = 'steerline.cmd.conversation.create';

  it('is read only when the body is {pattern, data, id} with pattern the subject it came on', () => {
    expect(nestRequest({ pattern: subject, data: { tenantId: 't' }, id: 'r1' }, subject)).toEqual({ id: 'r1', data: { tenantId: 't' } });
    expect(nestRequest({ pattern: subject, id: 'r1' }, subject)).toEqual({ id: 'r1', data: {} });
    // A command with such field names, another subject, an object pattern, extra keys, no id: not Nest's.
    expect(nestRequest({ tenantId: 't', pattern: subject, data: {}, id: 'r1' }, subject)).toBeUndefined();
    expect(nestRequest({ pattern: 'other.subject', data: {}, id: 'r1' }, subject)).toBeUndefined();
    expect(nestRequest({ pattern: { cmd: 'create' }, data: {}, id: 'r1' }, subject)).toBeUndefined();
    expect(nestRequest({ pattern: subject, data: {} }, subject)).toBeUndefined();
    expect(nestRequest({ pattern: subject, data: {}, id: 7 }, subject)).toBeUndefined();
    expect(nestRequest({ tenantId: 't' }, subject)).toBeUndefined();
    expect(nestRequest([subject], subject)).toBeUndefined();
    expect(nestRequest(null, subject)).toBeUndefined();
  });

  it('answers in Nest’s reply shape: response, or err with status "error" and the contract code', () => {
    expect(nestReply('r1', { ok: true, data: { id: 'c' } })).toEqual({ id: 'r1', response: { id: 'c' }, isDisposed: true });
    expect(nestReply('r1', { ok: false, error: { code: 'not_found', message: 'no such turn', turnId: 'x' } })).toEqual({
      id: 'r1',
      err: { status: 'error', code: 'not_found', message: 'no such turn', turnId: 'x' },
      isDisposed: true,
    });
  });

  describe('over NATS', () => {
    let server: NatsConnection;
    let client: NatsConnection;
    beforeAll(async () => {
      server = await connectNats(NATS_URL, 'nest-envelope-server');
      client = await connectNats(NATS_URL, 'nest-envelope-client');
    });
    afterAll(async () => {
      await client.close();
      await server.close();
    });

    it('a handler gets the envelope’s data; an answer over max_payload is refused in Nest’s shape too', async () => {
      const on = `${uniquePrefix()}.cmd.conversation.create`;
      const size = maxPayload(server) + 1;
      const seen: unknown[] = [];
      serve(server, on, (body) => {
        seen.push(body);
        return (body as { big?: boolean }).big ? 'x'.repeat(size) : { id: 'c1' };
      });
      await server.flush();
      const small = await client.request(on, encodeJson({ pattern: on, data: { big: false }, id: 'n1' }), { timeout: 10_000 });
      expect(small.json()).toEqual({ id: 'n1', response: { id: 'c1' }, isDisposed: true });
      const big = await client.request(on, encodeJson({ pattern: on, data: { big: true }, id: 'n2' }), { timeout: 10_000 });
      expect(big.json()).toMatchObject({ id: 'n2', err: { status: 'error', code: 'payload_too_large' }, isDisposed: true });
      expect(seen).toEqual([{ big: false }, { big: true }]);
    });
  });
});
